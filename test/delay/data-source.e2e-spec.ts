import { TypeOrmModule, getDataSourceToken } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';
import { createDelayTestApp } from './delay-test-app.js';

// DelayModule.forRoot({ dataSource: 'jobs', ...options }): the DataSource
// holding delayed_task is the one TypeORM registered under that name.

describe('DelayModule on a named DataSource', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  it('schedules, runs and hands handlers that DataSource, with no default one registered', async () => {
    const app = await createDelayTestApp(db, {}, { dataSourceName: 'jobs' });
    try {
      const jobs = app.moduleRef.get<DataSource>(getDataSourceToken('jobs'));
      expect(app.dataSource).toBe(jobs);
      expect(() => app.moduleRef.get(DataSource)).toThrow();

      const managers: unknown[] = [];
      app.behaviour.afterEffect = (_payload, { manager }) => {
        managers.push(manager.connection);
      };
      const task = await app.delay.schedule({ type: 'test.effect', delay: '1m', key: 'jobs:1' });
      expect(await jobs.query(`SELECT id FROM delayed_task WHERE key = 'jobs:1'`)).toEqual([
        { id: task.id },
      ]);
      await app.tester.advance('1m');
      expect(await app.delay.get({ id: task.id })).toMatchObject({ state: 'executed' });
      expect(await app.effects(task.id)).toBe(1);
      expect(managers).toEqual([jobs]);
      expect(await jobs.query(`SELECT id FROM delay_instance`)).toHaveLength(1);
    } finally {
      await app.close();
    }
  });
});

// Two pools at once: a default DataSource on another, empty database beside
// the named one. Had the module used the default, it would find no tables.
describeWithServer('DelayModule on a named DataSource beside a default one', () => {
  let db: TestDatabase;
  let other: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    other = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
    await other?.drop();
  });

  it('uses the named one for everything', async () => {
    const app = await createDelayTestApp(
      db,
      {},
      {
        dataSourceName: 'jobs',
        modules: [
          TypeOrmModule.forRoot({
            ...dataSourceOptions({ url: other.url, poolSize: 2, migrationsRun: false }),
            logging: false,
            retryAttempts: 0,
          }),
        ],
      },
    );
    try {
      const defaultDataSource = app.moduleRef.get(DataSource);
      expect(defaultDataSource).not.toBe(app.dataSource);
      expect(await defaultDataSource.query(`SELECT to_regclass('delayed_task') AS t`)).toEqual([
        { t: null },
      ]);

      const task = await app.delay.schedule({ type: 'test.effect', delay: '1m' });
      await app.tester.advance('1m');
      expect(await app.delay.get({ id: task.id })).toMatchObject({ state: 'executed' });
      expect(
        await app.dataSource.query(
          `SELECT executed_at IS NOT NULL AS done FROM delayed_task WHERE id = $1`,
          [task.id],
        ),
      ).toEqual([{ done: true }]);
      expect(await app.effects(task.id)).toBe(1);
      expect(await app.tester.perform('test.effect', null)).toEqual({ outcome: 'executed' });
      expect(await app.effects('0')).toBe(1);
    } finally {
      await app.close();
    }
  });
});
