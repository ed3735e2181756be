import { Injectable, Module, type DynamicModule } from '@nestjs/common';
import pg from 'pg';
import {
  DelayedTaskHandler,
  type DelayExecutor,
  type DelayModuleOptions,
  type TaskContext,
} from 'nest-delay';
import { pgTransaction } from 'nest-delay/pg';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { MINUTE, SECOND, createDelayTestApp, type DelayTestApp } from './delay-test-app.js';

/**
 * One ORM binding under test: how a test opens the ORM's own transaction
 * and hands it to DelayService, and how a handler writes through the ORM on
 * its claim's transaction. The cases below are the same for every binding.
 */
export interface BindingUnderTest {
  /** Runs `work` in a transaction of the ORM's own client: committed when it resolves, rolled back when it throws. */
  inTransaction<T>(work: (transaction: DelayExecutor) => Promise<T>): Promise<T>;
  /** Inserts an effect row for the task through the ORM, on the claim's transaction. */
  writeEffect(context: TaskContext): Promise<void>;
  close(): Promise<void>;
}

/** What the handler does beside its write; set by each test. */
export const handlerHooks: {
  binding?: BindingUnderTest;
  /** After the write, before the handler returns or throws. */
  afterWrite?: (context: TaskContext) => Promise<void>;
} = {};

@Injectable()
class BindingHandlers {
  /** Writes its effect through the binding; throws after it when the payload asks. */
  @DelayedTaskHandler('binding.effect')
  async effect(payload: { fail?: boolean } | null, context: TaskContext) {
    await handlerHooks.binding!.writeEffect(context);
    await handlerHooks.afterWrite?.(context);
    if (payload?.fail && context.attempt === 1) throw new Error('planned failure after the write');
  }
}

@Module({ providers: [BindingHandlers] })
class BindingHandlersModule {}

/** The effect row a handler writes, with the values it carries. */
export const effectRow = (context: TaskContext) => ({
  task_id: context.task.id,
  instance: context.instanceId,
  attempt: context.attempt,
  at: context.task.executedAt ?? new Date(),
});

/** A planned rollback, so a test can tell it from a real failure. */
export class Rollback extends Error {}

/** Starts a test database and app for a binding's spec; `open` builds the binding on the database's URL. */
export function useBindingApp(
  open: (url: string) => BindingUnderTest,
  options: DelayModuleOptions = {},
  setup: { withoutTypeorm?: boolean } = {},
): { readonly t: DelayTestApp; readonly binding: BindingUnderTest; readonly url: string } {
  let db: TestDatabase | undefined;
  let app: DelayTestApp | undefined;
  beforeAll(async () => {
    db = await createTestDatabase();
    app = await createDelayTestApp(
      db,
      { concurrency: 1, retry: { baseDelay: '10s', jitter: 0 }, ...options },
      { modules: [BindingHandlersModule as unknown as DynamicModule], ...setup },
    );
    handlerHooks.binding = open(db.url);
  });
  afterEach(() => {
    handlerHooks.afterWrite = undefined;
  });
  afterAll(async () => {
    await handlerHooks.binding?.close();
    await app?.close();
    await db?.drop();
  });
  return {
    get t() {
      return app!;
    },
    get binding() {
      return handlerHooks.binding!;
    },
    get url() {
      return db!.url;
    },
  };
}

/** The cases every binding passes: both transactional ends, through the ORM's real client. */
export function bindingCases(fixture: ReturnType<typeof useBindingApp>): void {
  const taskCount = async (key: string) =>
    Number(
      (await fixture.t.query(`SELECT count(*) FROM delayed_task WHERE key = $1`, [key]))[0].count,
    );

  beforeEach(async () => {
    await fixture.t.quiesce();
  });

  it('a task scheduled in a transaction that rolls back does not exist', async () => {
    const { t, binding } = fixture;
    let scheduled: string | undefined;
    await expect(
      binding.inTransaction(async (transaction) => {
        const task = await t.delay.schedule(
          { type: 'binding.effect', key: 'rolled-back', delay: '1m' },
          { transaction },
        );
        scheduled = task.id;
        // Inside the transaction the task is there.
        expect(await t.delay.get({ id: task.id }, { transaction })).toMatchObject({
          state: 'pending',
        });
        throw new Rollback();
      }),
    ).rejects.toBeInstanceOf(Rollback);
    expect(scheduled).toBeDefined();
    expect(await taskCount('rolled-back')).toBe(0);
    await t.tester.advance(MINUTE);
    expect(await t.effects(scheduled!)).toBe(0);
  });

  it('a task scheduled in a transaction that commits runs at its due time, not before', async () => {
    const { t, binding } = fixture;
    const task = await binding.inTransaction((transaction) =>
      t.delay.schedule({ type: 'binding.effect', key: 'committed', delay: '1m' }, { transaction }),
    );
    expect(await taskCount('committed')).toBe(1);
    await t.tester.advance(MINUTE - SECOND);
    expect(await t.effects(task.id)).toBe(0);
    await t.tester.advance(SECOND);
    expect(await t.effects(task.id)).toBe(1);
    const done = await t.delay.get({ id: task.id });
    expect(done).toMatchObject({ state: 'executed', attempts: 1 });
    expect(done!.executedAt!.getTime()).toBe(task.dueAt.getTime());
  });

  it('every write of DelayService joins the transaction, and rolls back with it', async () => {
    const { t, binding } = fixture;
    const kept = await t.delay.schedule({ type: 'binding.effect', key: 'kept', delay: '10m' });
    const entity = 'order:bindings';
    const run = (commit: boolean) =>
      binding.inTransaction(async (transaction) => {
        const [first, second] = await t.delay.scheduleMany(
          [
            { type: 'binding.effect', key: `many-1-${commit}`, delay: '5m', entity },
            { type: 'binding.effect', key: `many-2-${commit}`, delay: '5m', entity },
          ],
          { transaction },
        );
        expect([first.status, second.status]).toEqual(['scheduled', 'scheduled']);
        await t.delay.reschedule({ id: kept.id }, { delay: '2m' }, { transaction });
        await t.delay.cancel({ id: first.id }, { transaction });
        const moved = await t.delay.rescheduleEntity(entity, { by: '1m' }, { transaction });
        expect(moved.ids).toEqual([second.id]);
        const cancelled = await t.delay.cancelEntity(entity, { transaction });
        expect(cancelled.ids).toEqual([second.id]);
        if (!commit) throw new Rollback();
        return [first.id, second.id];
      });
    await expect(run(false)).rejects.toBeInstanceOf(Rollback);
    expect(await taskCount('many-1-false')).toBe(0);
    expect((await t.delay.get({ id: kept.id }))!.dueAt).toEqual(kept.dueAt);

    const [first, second] = await run(true);
    expect((await t.delay.get({ id: first }))!.state).toBe('cancelled');
    expect((await t.delay.get({ id: second }))!.state).toBe('cancelled');
    const moved = await t.delay.get({ id: kept.id });
    expect(moved!.dueAt.getTime()).toBe(t.clock.now() + 2 * MINUTE);
    await t.tester.advance(2 * MINUTE);
    expect(await t.effects(kept.id)).toBe(1);
  });

  it("a handler's write through the binding is in the claim's transaction: committed with executed_at", async () => {
    const { t, url } = fixture;
    const outside = new pg.Client({ connectionString: url });
    await outside.connect();
    let seenOutside: number | undefined;
    try {
      handlerHooks.afterWrite = async (context) => {
        const { rows } = await outside.query(
          `SELECT count(*)::int AS n FROM effect WHERE task_id = $1`,
          [context.task.id],
        );
        seenOutside = rows[0].n;
      };
      const task = await t.delay.schedule({ type: 'binding.effect', delay: 0 });
      await t.tester.runDue();
      // Written, but not committed before the claim committed.
      expect(seenOutside).toBe(0);
      expect(await t.effects(task.id)).toBe(1);
      expect(await t.delay.get({ id: task.id })).toMatchObject({ state: 'executed', attempts: 1 });
    } finally {
      await outside.end();
    }
  });

  it("a handler's write through the binding rolls back with its failed attempt, and the task is retried", async () => {
    const { t } = fixture;
    const task = await t.delay.schedule({
      type: 'binding.effect',
      delay: 0,
      payload: { fail: true },
    });
    await t.tester.runDue();
    expect(await t.effects(task.id)).toBe(0);
    expect(await t.delay.get({ id: task.id })).toMatchObject({
      state: 'pending',
      attempts: 1,
      lastError: 'Error: planned failure after the write',
    });
    await t.tester.advance('10s');
    expect(await t.effects(task.id)).toBe(1);
    expect(await t.delay.get({ id: task.id })).toMatchObject({ state: 'executed', attempts: 2 });
  });
}

/**
 * The case of a binding whose ORM, in the handler (`open`), opens a
 * transaction of its own on the claim's connection or ends the claim's: the
 * statement is refused (as the ORM reports `verb`), the attempt fails and
 * nothing commits early.
 */
export function refusesOwnTransaction(
  fixture: ReturnType<typeof useBindingApp>,
  verb: string,
  open: (context: TaskContext) => Promise<unknown>,
): void {
  it(`refuses "${verb}" on the claim's connection (the ORM's own transaction, or an end of the claim's): the attempt fails, nothing commits early`, async () => {
    const { t } = fixture;
    handlerHooks.afterWrite = async (context) => {
      if (context.attempt === 1) await open(context);
    };
    const task = await t.delay.schedule({ type: 'binding.effect', delay: 0 });
    await t.tester.runDue();
    expect(await t.effects(task.id)).toBe(0);
    const failed = await t.delay.get({ id: task.id });
    expect(failed).toMatchObject({ state: 'pending', attempts: 1 });
    expect(failed!.lastError).toContain(
      `"${verb}" refused: a handler runs inside its claim's transaction`,
    );
    await t.tester.advance('10s');
    expect(await t.effects(task.id)).toBe(1);
  });
}

/** node-pg: a pool's client inside BEGIN; a handler writes through `context.client`. */
export function pgBinding(url: string): BindingUnderTest {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  return {
    async inTransaction(work) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await work(pgTransaction(client));
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      } finally {
        client.release();
      }
    },
    async writeEffect(context: TaskContext) {
      const row = effectRow(context);
      await context.client.query(
        `INSERT INTO effect (task_id, instance, attempt, at) VALUES ($1, $2, $3, $4)`,
        [row.task_id, row.instance, row.attempt, row.at],
      );
    },
    close: () => pool.end(),
  };
}
