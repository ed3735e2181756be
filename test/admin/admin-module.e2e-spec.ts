import {
  Injectable,
  Module,
  type CanActivate,
  type ExecutionContext,
  type INestApplication,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { Browser } from 'playwright-core';
import request from 'supertest';
import { DelayModule, DelayService, DelayedTaskHandler, delayMigrations } from 'nest-delay';
import { DelayAdminModule, type DelayAdminModuleOptions } from 'nest-delay/admin';
import { DelayTester, useManualClock } from 'nest-delay/testing';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import {
  describeInChromium,
  errorsOf,
  launchChromium,
  listen,
  newPage,
  textOf,
} from './admin-browser.js';

// DelayAdminModule as a library user mounts it: a small app of its own (no
// AppModule, no global pipes or filters), the module's options and nothing else.

const TOKEN = 'module-test-token-0123456789abcdef01234567';

/** Who the app lets in: its own idea of an operator, here a header a proxy would set. */
@Injectable()
class Operators {
  isOperator(value: unknown): boolean {
    return value === 'alice';
  }
}

@Module({ providers: [Operators], exports: [Operators] })
class OperatorsModule {}

/** The app's own guard: a class Nest builds, with what `imports` gives it. */
@Injectable()
class OperatorGuard implements CanActivate {
  constructor(private readonly operators: Operators) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<{ headers: Record<string, unknown> }>();
    return this.operators.isOperator(request.headers['x-operator']);
  }
}

@Injectable()
class Reminders {
  readonly sent: string[] = [];

  @DelayedTaskHandler('reminder.send')
  send(payload: { to: string }) {
    this.sent.push(payload.to);
  }
}

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

async function mount(options: DelayAdminModuleOptions): Promise<INestApplication> {
  const moduleRef = await useManualClock(
    Test.createTestingModule({
      imports: [
        TypeOrmModule.forRoot({
          type: 'postgres',
          url: db.url,
          extra: { max: db.poolSize },
          migrations: delayMigrations,
          migrationsRun: true,
          retryAttempts: 0,
        }),
        DelayModule.forRoot({}),
        DelayAdminModule.forRoot(options),
      ],
      providers: [Reminders],
    }),
  ).compile();
  return moduleRef.createNestApplication({ logger: false }).init();
}

describe('DelayAdminModule.forRoot refuses to mount an admin anyone could use', () => {
  it.each<[string, DelayAdminModuleOptions, RegExp]>([
    ['neither guard nor token', {}, /guard or token is needed/],
    ['a short token', { token: 'secret' }, /token must be 32 characters or more/],
    ['unsafeNoAuth beside a token', { token: TOKEN, unsafeNoAuth: true }, /unsafeNoAuth goes/],
    ['a path that is not one', { token: TOKEN, path: 'admin' }, /path must be a path/],
    ['a misspelt option', { token: TOKEN, gaurd: OperatorGuard } as object, /gaurd is not/],
  ])('with %s, naming the option', (_, options, message) => {
    expect(() => DelayAdminModule.forRoot(options)).toThrow(message);
  });
});

describe("DelayAdminModule behind the app's guard, at a path of its own", () => {
  let app: INestApplication;
  beforeAll(async () => {
    app = await mount({ path: '/ops/delay/', guard: OperatorGuard, imports: [OperatorsModule] });
  });
  afterAll(() => app?.close());
  const http = () => request(app.getHttpServer());

  it('serves the page and its API there, to whom the guard lets in', async () => {
    const page = await http().get('/ops/delay').set('x-operator', 'alice').expect(200);
    expect(page.type).toBe('text/html');
    expect(page.text).toContain('src="/ops/delay/assets/main.js"');
    expect(page.text).toContain('<meta name="delay-admin-auth" content="none" />');
    await http().get('/ops/delay/assets/main.js').set('x-operator', 'alice').expect(200);
    const counts = await http().get('/ops/delay/api/counts').set('x-operator', 'alice');
    expect(counts.status).toBe(200);
    expect(counts.body).toMatchObject({ cap: 100_000, states: { pending: { count: 0 } } });
  });

  it('is a 403 to anyone else, page and API alike, and nothing is at /admin', async () => {
    await http().get('/ops/delay').expect(403);
    await http().get('/ops/delay/api/counts').set('x-operator', 'mallory').expect(403);
    await http().get('/admin').set('x-operator', 'alice').expect(404);
    await http().get('/admin/api/counts').set('x-operator', 'alice').expect(404);
  });

  it("validates input with its own pipes, whatever the app's", async () => {
    const res = await http()
      .get('/ops/delay/api/tasks?limit=100000&colour=red')
      .set('x-operator', 'alice');
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body.message)).toMatch(/colour should not exist/);
  });

  it('points its errors at its own routes', async () => {
    const res = await http().post('/ops/delay/api/types/no.such/pause').set('x-operator', 'alice');
    expect(res.status).toBe(404);
    expect(res.body.message).toContain('(GET /ops/delay/api/types lists them)');
  });
});

describe('DelayAdminModule with both a guard and a token', () => {
  let app: INestApplication;
  beforeAll(async () => {
    app = await mount({ guard: new OperatorGuard(new Operators()), token: TOKEN });
  });
  afterAll(() => app?.close());
  const http = () => request(app.getHttpServer());

  it('lets a request in only when both do', async () => {
    const auth = `Bearer ${TOKEN}`;
    await http().get('/admin/api/wheel').set('x-operator', 'alice').expect(401);
    await http().get('/admin/api/wheel').set('Authorization', auth).expect(403);
    await http()
      .get('/admin/api/wheel')
      .set('x-operator', 'alice')
      .set('Authorization', auth)
      .expect(200);
    // The page asks for the token; the guard still decides who sees it.
    const page = await http().get('/admin').set('x-operator', 'alice').expect(200);
    expect(page.text).toContain('<meta name="delay-admin-auth" content="bearer" />');
  });
});

describe('DelayAdminModule with unsafeNoAuth', () => {
  let app: INestApplication;
  beforeAll(async () => {
    app = await mount({ unsafeNoAuth: true });
  });
  afterAll(() => app?.close());

  it('is open to anyone who reaches the app, as it was told', async () => {
    await request(app.getHttpServer()).get('/admin/api/wheel').expect(200);
  });
});

describeInChromium('admin module browser test')(
  "the page behind the app's guard, in Chromium",
  () => {
    let app: INestApplication;
    let browser: Browser;
    let base: string;
    beforeAll(async () => {
      app = await mount({ guard: OperatorGuard, imports: [OperatorsModule] });
      base = await listen(app);
      browser = await launchChromium();
    });
    afterAll(async () => {
      await browser?.close();
      await app?.close();
    });

    it('opens the dashboard without asking for a token, and shows a task and its timeline', async () => {
      const delay = app.get(DelayService);
      const tester = DelayTester.for(app);
      await tester.reset();
      await delay.schedule({
        type: 'reminder.send',
        payload: { to: 'bob' },
        delay: '1h',
        entity: 'user:7',
      });
      const page = await newPage(browser);
      await page.setExtraHTTPHeaders({ 'x-operator': 'alice' });
      await page.goto(`${base}/admin#/timeline?entity=user:7`);
      await page.waitForSelector('#nav:not([hidden])');
      expect(await page.isHidden('#login')).toBe(true);
      expect(await textOf(page, '#nav a[data-view=timeline]')).toBe('Entity timeline');
      await page.waitForSelector('#timeline-steps tbody tr[data-event="scheduled"]');
      expect(await textOf(page, '#timeline-title')).toBe('user:7');
      expect(await textOf(page, '#timeline-tasks')).toContain('reminder.send');
      expect(errorsOf(page)).toEqual([]);
    });
  },
);
