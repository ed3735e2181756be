import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DelayService } from 'nest-delay';
import { DelayTester, useManualClock } from 'nest-delay/testing';
import request from 'supertest';
import { AppModule } from '../../src/app.module.js';
import { loadConfig } from '../../src/config/app-config.js';
import { configureApp } from '../../src/configure-app.js';
import { AppLogger } from '../../src/ops/logging/app-logger.js';
import { withTestAuth } from '../support/app-factory.js';
import { userToken } from '../support/auth.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

/** The app with its real logger in JSON, writing into `lines`. */
describe('logs', () => {
  const lines: Array<Record<string, any>> = [];
  let db: TestDatabase;
  let app: INestApplication;
  let tester: DelayTester;

  beforeAll(async () => {
    db = await createTestDatabase();
    const config = loadConfig(withTestAuth({ DB_POOL_SIZE: String(db.poolSize) }));
    const logger = new AppLogger({
      format: 'json',
      level: 'debug',
      destination: { write: (line: string) => lines.push(JSON.parse(line)) },
    });
    const moduleRef = await useManualClock(
      Test.createTestingModule({ imports: [AppModule.forRoot(config, db.url)] }),
    ).compile();
    app = configureApp(moduleRef.createNestApplication({ logger }));
    await app.init();
    tester = DelayTester.for(app);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });
  beforeEach(() => {
    lines.length = 0;
  });

  const token = userToken('u');
  /** Requests as user `u`. */
  const http = () => {
    const agent = request(app.getHttpServer());
    return {
      get: (path: string) => agent.get(path).set('Authorization', `Bearer ${token}`),
      post: (path: string) => agent.post(path).set('Authorization', `Bearer ${token}`),
    };
  };

  it('writes JSON lines with a level, a time and the logger context, never the bearer token', async () => {
    await http().get('/orders').expect(200);
    expect(JSON.stringify(lines)).not.toContain(token);
    const [line] = lines.filter((l) => l.context === 'HTTP');
    expect(line).toMatchObject({
      level: 'info',
      msg: expect.stringMatching(/^GET \/orders 200 \d+ ms$/),
    });
    expect(new Date(line.time).toString()).not.toBe('Invalid Date');
  });

  it('never writes a token sent in the query string to the access log', async () => {
    const secret = 'f00dfeed0123456789abcdef0123456789';
    await http().get(`/orders?token=${secret}&limit=5`);
    const [line] = lines.filter((l) => l.context === 'HTTP');
    expect(line.msg).toMatch(/^GET \/orders\?token=REDACTED&limit=5 \d{3} \d+ ms$/);
    expect(JSON.stringify(lines)).not.toContain(secret);
  });

  it("puts the caller's X-Request-Id on the request's lines and echoes it", async () => {
    const res = await http()
      .post('/orders')
      .set('X-Request-Id', 'req-abc.123')
      .send({ userId: 'u', amountCents: 1 })
      .expect(201);
    expect(res.headers['x-request-id']).toBe('req-abc.123');
    expect(lines.filter((l) => l.requestId === 'req-abc.123').map((l) => l.msg)).toEqual([
      expect.stringMatching(/^POST \/orders 201 /),
    ]);
  });

  it('makes a request id when there is none, or when the given one is not plain', async () => {
    const made = await http().get('/orders').expect(200);
    const replaced = await http().get('/orders').set('X-Request-Id', 'a b forged=1').expect(200);
    const uuid = /^[0-9a-f-]{36}$/;
    expect(made.headers['x-request-id']).toMatch(uuid);
    expect(replaced.headers['x-request-id']).toMatch(uuid);
    expect(lines.map((l) => l.requestId)).toEqual([
      made.headers['x-request-id'],
      replaced.headers['x-request-id'],
    ]);
  });

  it("puts the task's id, type, key and attempt on every line logged while it runs", async () => {
    const orderId = '00000000-0000-4000-8000-00000000abcd';
    const task = await app.get(DelayService).schedule({
      type: 'order.close-unpaid',
      key: `order:${orderId}:close-unpaid`,
      payload: { orderId },
      delay: 0,
    });
    await tester.runDue();
    // The handler finds no such order and says so.
    expect(lines.filter((l) => l.taskId !== undefined)).toEqual([
      expect.objectContaining({
        level: 'warn',
        context: 'OrderTaskHandlers',
        msg: `Order ${orderId} not found; nothing to do`,
        taskId: task.id,
        taskType: 'order.close-unpaid',
        taskKey: `order:${orderId}:close-unpaid`,
        attempt: 1,
      }),
    ]);
  });
});
