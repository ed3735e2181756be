import { Injectable, Module } from '@nestjs/common';
import { DelayedTaskHandler, type TaskContext } from 'nest-delay';
import { useDelayTestApp, type DelayTestApp } from './delay-test-app.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** How many handlers of the types below were running at once, at most. */
class Overlap {
  running = 0;
  most = 0;
  enter(): void {
    this.most = Math.max(this.most, ++this.running);
  }
  leave(): void {
    this.running--;
  }
}
const overlap = new Overlap();

/**
 * Handlers of one claim run at once (handlersPerClaim) while their
 * statements take turns: each one's work in the transaction must be as if
 * they ran one after another.
 */
@Injectable()
class AtOnceHandlers {
  /** Waits (an outside call) before its first statement: what overlaps. */
  @DelayedTaskHandler('at-once.waits-first')
  async waitsFirst(_payload: unknown, { manager, task }: TaskContext) {
    overlap.enter();
    try {
      await sleep(50);
      await manager.query(`INSERT INTO at_once_mark (task_id, seen) VALUES ($1, 0)`, [task.id]);
    } finally {
      overlap.leave();
    }
  }

  /**
   * Waits, reads how many marks there are, waits, then writes that count:
   * run one after another each sees the marks before it, so no two write
   * the same.
   */
  @DelayedTaskHandler('at-once.read-then-write')
  async readThenWrite(_payload: unknown, { manager, task }: TaskContext) {
    overlap.enter();
    try {
      await sleep(5);
      const [{ n }] = await manager.query(`SELECT count(*)::int AS n FROM at_once_mark`);
      await sleep(10);
      await manager.query(`INSERT INTO at_once_mark (task_id, seen) VALUES ($1, $2)`, [task.id, n]);
    } finally {
      overlap.leave();
    }
  }

  /** Goes straight to its statements: nothing of it would overlap. */
  @DelayedTaskHandler('at-once.db-first')
  async dbFirst(_payload: unknown, { manager, task }: TaskContext) {
    overlap.enter();
    try {
      await manager.query(`INSERT INTO at_once_mark (task_id, seen) VALUES ($1, 0)`, [task.id]);
      await sleep(5);
    } finally {
      overlap.leave();
    }
  }

  /** A nested transaction (a savepoint TypeORM names by its depth), after a wait. */
  @DelayedTaskHandler('at-once.nested')
  async nested(payload: { waitMs: number }, { manager, task }: TaskContext) {
    await sleep(payload.waitMs);
    await manager.transaction(async (inner) => {
      await inner.query(`INSERT INTO at_once_mark (task_id, seen) VALUES ($1, 0)`, [task.id]);
      await sleep(5);
    });
  }

  /** Holds its turn for a while (`holdMs`): its batch-mates wait for it. */
  @DelayedTaskHandler('at-once.holds-turn')
  async holdsTurn(payload: { holdMs: number }, { manager, task }: TaskContext) {
    await sleep(5);
    await manager.query(`INSERT INTO at_once_mark (task_id, seen) VALUES ($1, 0)`, [task.id]);
    await sleep(payload.holdMs);
  }

  /** Its timeout and grace (1 s each) are shorter than the wait for its turn. */
  @DelayedTaskHandler('at-once.short-timeout', { timeout: '1s', maxAttempts: 1 })
  async shortTimeout(_payload: unknown, { manager, task }: TaskContext) {
    await sleep(5);
    await manager.query(`INSERT INTO at_once_mark (task_id, seen) VALUES ($1, 0)`, [task.id]);
  }
}

@Module({ providers: [AtOnceHandlers] })
class AtOnceModule {}

describe.each([
  { handlersPerClaim: 8, together: true },
  { handlersPerClaim: 1, together: false },
])('handlersPerClaim: $handlersPerClaim', ({ handlersPerClaim, together }) => {
  const app = useDelayTestApp(
    { concurrency: 1, batchSize: 50, handlersPerClaim },
    { modules: [{ module: AtOnceModule }] },
  );
  let t: DelayTestApp;

  beforeAll(async () => {
    t = app.t;
    await t.query(`CREATE TABLE at_once_mark (task_id bigint NOT NULL, seen int NOT NULL)`);
  });

  beforeEach(async () => {
    await t.quiesce();
    await t.query(`DELETE FROM at_once_mark`);
    overlap.most = 0;
  });

  const marks = async () =>
    t.query<{ task_id: string; seen: number }>(`SELECT * FROM at_once_mark ORDER BY seen`);

  /**
   * Runs one task of each type alone first: a type not seen yet runs one
   * after another, where the engine learns whether its handlers wait before
   * their first statement.
   */
  async function learn(...tasks: Array<{ type: string; payload?: unknown }>): Promise<void> {
    for (const task of tasks) {
      await t.delay.schedule({ ...task, delay: 0 });
      await t.tester.runDue();
    }
    await t.query(`DELETE FROM at_once_mark`);
    overlap.most = 0;
  }

  it(`runs a claim's handlers ${together ? 'at once' : 'one after another'}, each once`, async () => {
    await learn({ type: 'at-once.waits-first' });
    const tasks = await t.delay.scheduleMany(
      Array.from({ length: 8 }, () => ({ type: 'at-once.waits-first', delay: 0 })),
    );
    const report = await t.tester.runDue();
    expect(report.byType['at-once.waits-first']).toMatchObject({ executed: 8, failed: 0 });
    expect((await marks()).map((mark) => mark.task_id).sort()).toEqual(
      tasks.map((task) => task.id).sort(),
    );
    if (together) expect(overlap.most).toBeGreaterThan(1);
    else expect(overlap.most).toBe(1);
  });

  it('lets each handler see the writes of those before it, as one after another', async () => {
    await learn({ type: 'at-once.read-then-write' });
    await t.delay.scheduleMany(
      Array.from({ length: 8 }, () => ({ type: 'at-once.read-then-write', delay: 0 })),
    );
    const report = await t.tester.runDue();
    expect(report.byType['at-once.read-then-write']).toMatchObject({ executed: 8, failed: 0 });
    expect((await marks()).map((mark) => mark.seen)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    if (together) expect(overlap.most).toBeGreaterThan(1);
  });

  it('runs handlers that go straight to their statements one after another: nothing would overlap', async () => {
    await learn({ type: 'at-once.db-first' });
    const tasks = await t.delay.scheduleMany(
      Array.from({ length: 8 }, () => ({ type: 'at-once.db-first', delay: 0 })),
    );
    const report = await t.tester.runDue();
    expect(report.byType['at-once.db-first']).toMatchObject({ executed: 8, failed: 0 });
    expect(await marks()).toHaveLength(tasks.length);
    expect(overlap.most).toBe(1);
  });

  it("keeps each handler's nested transactions to itself: every one commits at its first attempt", async () => {
    await learn({ type: 'at-once.nested', payload: { waitMs: 5 } });
    const tasks = await t.delay.scheduleMany(
      [20, 1, 10, 2, 5, 15].map((waitMs) => ({
        type: 'at-once.nested',
        payload: { waitMs },
        delay: 0,
      })),
    );
    const report = await t.tester.runDue();
    expect(report.byType['at-once.nested']).toMatchObject({ executed: 6, failed: 0 });
    for (const task of tasks)
      expect(await t.delay.get({ id: task.id })).toMatchObject({ state: 'executed', attempts: 1 });
    expect(await marks()).toHaveLength(6);
  });

  it('does not count the time a handler waits for its turn against its timeout', async () => {
    await learn(
      { type: 'at-once.holds-turn', payload: { holdMs: 0 } },
      { type: 'at-once.short-timeout' },
    );
    const holder = await t.delay.schedule({
      type: 'at-once.holds-turn',
      payload: { holdMs: 2500 },
      delay: 0,
    });
    const waiter = await t.delay.schedule({ type: 'at-once.short-timeout', delay: 0 });
    const report = await t.tester.runDue();
    expect(report).toMatchObject({ executed: 2, failed: 0 });
    for (const task of [holder, waiter])
      expect(await t.delay.get({ id: task.id })).toMatchObject({ state: 'executed', attempts: 1 });
  });
});
