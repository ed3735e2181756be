import { Injectable, Module } from '@nestjs/common';
import type { QueryRunner } from 'typeorm';
import { DelayLimits, DelayService, DelayedTaskHandler, type TaskContext } from 'nest-delay';
import { useDelayTestApp, type DelayTestApp } from './delay-test-app.js';

/**
 * A task leased to a live instance and held nowhere in it would wait for a
 * restart or a takeover (docs/close-burst.md): the paths that led there are
 * closed, a task scheduled inside a claim runs once that claim commits, and
 * the safety net (lease/stranded-sweep.ts) holds any such task again.
 */

const ran: string[] = [];
/** Set by a test: runs inside 'chain.first' after it scheduled 'chain.second'. */
let whileFirstOpen: (() => Promise<void>) | undefined;
/** Set by a test: runs inside 'strand.line' before it returns. */
let duringLine: ((id: string) => Promise<void>) | undefined;

@Injectable()
class StrandHandlers {
  constructor(private readonly delay: DelayService) {}

  @DelayedTaskHandler('chain.first')
  async first(_payload: unknown, context: TaskContext) {
    ran.push('first');
    // Due at once, in the claim's own transaction.
    await this.delay.schedule(
      { type: 'chain.second', payload: null, delay: 0 },
      { manager: context.manager },
    );
    await whileFirstOpen?.();
  }

  @DelayedTaskHandler('chain.second')
  second() {
    ran.push('second');
  }

  @DelayedTaskHandler('strand.line', { limit: { concurrency: 1 } })
  async line(_payload: unknown, context: TaskContext) {
    ran.push(context.task.id);
    await duringLine?.(context.task.id);
  }

  @DelayedTaskHandler('strand.plain')
  plain(_payload: unknown, context: TaskContext) {
    ran.push(context.task.id);
  }
}

@Module({ providers: [StrandHandlers] })
class StrandModule {}

const app = useDelayTestApp(
  { instanceId: 'strand', concurrency: 3 },
  { modules: [{ module: StrandModule }] },
);
let t: DelayTestApp;

beforeAll(() => {
  t = app.t;
});

beforeEach(() => {
  ran.length = 0;
  whileFirstOpen = undefined;
  duringLine = undefined;
});

describe('a task scheduled inside a claim transaction, due at once', () => {
  it('runs once that claim commits, not a loader round later', async () => {
    const runtime = t.delay['runtime'];
    const runner = runtime.dispatcher['runner'];
    const run = runner.run.bind(runner);
    let firstClaimOfSecond: Promise<unknown> | undefined;
    runner.run = (ids, alone, line) => {
      const claim = run(ids, alone, line);
      firstClaimOfSecond ??= ids.some((id) => id !== firstId) ? claim : undefined;
      return claim;
    };
    // The first handler stays open until the second task's early claim (it
    // fired from the wheel before the first's claim committed) has ended.
    whileFirstOpen = async () => {
      while (!firstClaimOfSecond) {
        runtime.wheel.turnNow();
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      await firstClaimOfSecond;
    };
    const firstId = (await t.delay.schedule({ type: 'chain.first', payload: null, delay: 0 })).id;
    await t.tester.runDue();
    // The next turn at the latest (no heartbeat, no loader round in between).
    await t.tester.runDue();
    expect(ran).toEqual(['first', 'second']);
    runner.run = run;
  });
});

describe('a gate claim refused after a task it passed by', () => {
  it('holds the passed task again: it runs without a restart', async () => {
    const runtime = t.delay['runtime'];
    const limits = t.moduleRef.get(DelayLimits);
    const { instanceId } = runtime.ctx.options;
    const due = t.clock.now() - 10;
    // Leased here and handed to the gate together, as one fired claim would.
    const rows = await t.query<{ id: string; due: string }>(
      `INSERT INTO delayed_task (type, payload, due_at, max_attempts, locked_by, created_at, updated_at)
       SELECT 'strand.line', 'null'::jsonb, $1::timestamptz + n * interval '1 millisecond', 3, $2, $1, $1
       FROM generate_series(0, 2) n RETURNING id::text, (extract(epoch FROM due_at) * 1000)::float8 AS due`,
      [new Date(due), instanceId],
    );
    const ids = rows.map((row) => row.id);
    const [passed, runs, refused] = ids;
    // The first task's row is locked elsewhere when the gate's claim reaches it
    // (SKIP LOCKED passes it by); the second runs and, meanwhile, a rate is set
    // at run time: the third's claim statement is refused ('unpaced').
    let locker: QueryRunner | undefined;
    const gateClaims = runtime.dispatcher['gateClaims'];
    const gateRun = gateClaims.run.bind(gateClaims);
    gateClaims.run = async (gated) => {
      if (!locker && gated.items.length === 3) {
        locker = t.dataSource.createQueryRunner();
        await locker.startTransaction();
        await locker.query(`SELECT id FROM delayed_task WHERE id = $1 FOR UPDATE`, [passed]);
      }
      return gateRun(gated);
    };
    duringLine = async (id) => {
      if (id !== runs || !locker) return;
      await limits.set('strand.line', { rate: { starts: 100, per: '1s' } });
      await locker.commitTransaction();
      await locker.release();
    };
    runtime.dispatcher.gate.add(
      rows.map((row) => ({
        id: row.id,
        type: 'strand.line',
        payload: null,
        dueAtMs: Number(row.due),
      })),
    );
    // Short steps: the line's backoffs pass, no heartbeat (nor safety net) comes.
    for (let i = 0; i < 10 && ran.length < 3; i++) await t.tester.advance(100);
    gateClaims.run = gateRun;
    expect(locker).toBeDefined();
    expect([...ran].sort()).toEqual([...ids].sort());
    expect(ran[0]).toBe(runs);
    expect(ran).toContain(refused);
    await limits.reset('strand.line');
    await t.quiesce();
  });
});

describe('the safety net', () => {
  it("runs a task leased here behind the engine's back within a heartbeat or two", async () => {
    const runtime = t.delay['runtime'];
    const { instanceId, heartbeatMs } = runtime.ctx.options;
    const now = t.clock.now();
    const [{ id }] = await t.query<{ id: string }>(
      `INSERT INTO delayed_task (type, payload, due_at, max_attempts, locked_by, created_at, updated_at)
       VALUES ('strand.plain', 'null'::jsonb, $1, 3, $2, $1, $1) RETURNING id::text`,
      [new Date(now - 5_000), instanceId],
    );
    await t.tester.runDue();
    expect(ran).toEqual([]);
    for (let beats = 0; beats < 2 && ran.length === 0; beats++) await t.tester.advance(heartbeatMs);
    expect(ran).toEqual([id]);
    expect(t.delay.stats().rescued).toBe(1);
  });

  it('runs a task whose scheduling call lost its reply after the commit, within a heartbeat or two', async () => {
    type Query = (...args: unknown[]) => Promise<unknown>;
    const pool = (t.dataSource.driver as unknown as { master: { query: Query } }).master;
    const query = pool.query;
    // The insert commits; its reply never comes back (a backend terminated just then).
    pool.query = async function (this: unknown, ...args: unknown[]) {
      pool.query = query;
      await query.apply(this, args);
      throw new Error('Connection terminated unexpectedly');
    };
    const rescuedBefore = t.delay.stats().rescued;
    await expect(
      t.delay.schedule({ type: 'strand.plain', payload: null, runAt: t.clock.now() }),
    ).rejects.toThrow('Connection terminated unexpectedly');
    const [{ id }] = await t.query<{ id: string }>(
      `SELECT max(id)::text AS id FROM delayed_task WHERE type = 'strand.plain'`,
    );
    await t.tester.runDue();
    expect(ran).toEqual([]);
    // Leased here and held nowhere: the safety net finds it at the next loader round.
    const { heartbeatMs } = t.delay['runtime'].ctx.options;
    for (let beats = 0; beats < 2 && ran.length === 0; beats++) await t.tester.advance(heartbeatMs);
    expect(ran).toEqual([id]);
    expect(t.delay.stats().rescued).toBe(rescuedBefore + 1);
  });
});
