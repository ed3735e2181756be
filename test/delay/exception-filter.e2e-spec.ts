import { Controller, Param, Post, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import request from 'supertest';
import { DelayExceptionFilter, DelayModule, DelayService, DelayedTaskHandler } from 'nest-delay';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';
import { SilentLogger } from './delay-test-app.js';

/** A fresh app's controller that lets the package's errors through, as most will. */
@Controller('tasks')
class TasksController {
  constructor(private readonly delay: DelayService) {}

  @Post()
  async create() {
    const task = await this.delay.schedule({ type: 'filter.noop', delay: '1h' });
    return { id: task.id };
  }

  @Post(':id/cancel')
  cancel(@Param('id') id: string) {
    return this.delay.cancel({ id });
  }

  @Post(':id/revive')
  revive(@Param('id') id: string) {
    return this.delay.revive({ id });
  }

  @Post('bad-delay')
  bad() {
    return this.delay.schedule({ type: 'filter.noop', delay: '20 seconds' });
  }
}

class NoopHandler {
  @DelayedTaskHandler('filter.noop')
  run() {}
}

// The one line the package README shows: the package's errors answer 400, 404, 409.
describeWithServer('DelayExceptionFilter in a fresh app', () => {
  let db: TestDatabase;
  let app: INestApplication;

  beforeAll(async () => {
    db = await createTestDatabase();
    const moduleRef = await Test.createTestingModule({
      imports: [
        TypeOrmModule.forRoot({
          ...dataSourceOptions({ url: db.url, poolSize: db.poolSize, migrationsRun: true }),
          retryAttempts: 0,
        }),
        DelayModule.forRoot({}),
      ],
      controllers: [TasksController],
      providers: [NoopHandler],
    })
      .setLogger(new SilentLogger())
      .compile();
    app = moduleRef.createNestApplication({ logger: false });
    app.useGlobalFilters(new DelayExceptionFilter(app.getHttpAdapter()));
    await app.init();
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('answers 404 for a task that does not exist, naming it', async () => {
    const res = await request(app.getHttpServer()).post('/tasks/987654/cancel').expect(404);
    expect(res.body).toMatchObject({ statusCode: 404, error: 'Not Found', id: '987654' });
    expect(res.body.message).toContain('987654');
  });

  it('answers 409 for an action that does not fit the task state, naming the state', async () => {
    const { id } = (await request(app.getHttpServer()).post('/tasks').expect(201)).body;
    await request(app.getHttpServer()).post(`/tasks/${id}/cancel`).expect(201);
    const res = await request(app.getHttpServer()).post(`/tasks/${id}/cancel`).expect(409);
    expect(res.body).toMatchObject({ statusCode: 409, error: 'Conflict', state: 'cancelled' });
  });

  it('answers 400 for a bad input, naming the field', async () => {
    const res = await request(app.getHttpServer()).post('/tasks/bad-delay').expect(400);
    expect(res.body).toMatchObject({ statusCode: 400, field: 'delay' });
  });
});
