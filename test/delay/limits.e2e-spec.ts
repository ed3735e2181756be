import { ConsoleLogger, Injectable, Module } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import {
  DelayLimits,
  DelayModule,
  DelayService,
  DelayedTaskHandler,
  type TaskContext,
} from 'nest-delay';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';
import { SilentLogger } from './delay-test-app.js';

/** What every handler run did, in this process's clock (the three instances share it). */
interface Run {
  type: string;
  key: string;
  id: string;
  attempt: number;
  start: number;
  end: number;
}
const runs: Run[] = [];

const CONCURRENCY = 3;
const STARTS = 100;
const PER_MS = 1000;

@Injectable()
class LimitedHandlers {
  /** Calls a partner per merchant: at most 3 at once and 100 starts a second, per merchant. */
  @DelayedTaskHandler('test.partner-call', {
    limit: {
      concurrency: CONCURRENCY,
      rate: { starts: STARTS, per: PER_MS },
      key: (payload: { merchant: string }) => payload.merchant,
    },
  })
  async partnerCall(payload: { merchant: string }, context: TaskContext) {
    const start = Date.now();
    await context.manager.query(`INSERT INTO limited_effect (task_id) VALUES ($1)`, [
      context.task.id,
    ]);
    await new Promise((resolve) => setTimeout(resolve, 5));
    runs.push({
      type: 'test.partner-call',
      key: payload.merchant,
      id: context.task.id,
      attempt: context.attempt,
      start,
      end: Date.now(),
    });
  }

  /** No limit: must keep its pace while the limited type waits. */
  @DelayedTaskHandler('test.free')
  async free(_payload: unknown, context: TaskContext) {
    const start = Date.now();
    await context.manager.query(`INSERT INTO limited_effect (task_id) VALUES ($1)`, [
      context.task.id,
    ]);
    runs.push({
      type: 'test.free',
      key: '',
      id: context.task.id,
      attempt: context.attempt,
      start,
      end: Date.now(),
    });
  }
}

@Module({ providers: [LimitedHandlers] })
class LimitedModule {}

async function startInstance(db: TestDatabase, instanceId: string): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      TypeOrmModule.forRoot({
        ...dataSourceOptions({ url: db.url, poolSize: 9, migrationsRun: true }),
        logging: false,
        retryAttempts: 0,
      }),
      DelayModule.forRoot({ instanceId, concurrency: 8, lease: '3s' }),
      LimitedModule,
    ],
  })
    .setLogger(process.env.TEST_LOGS ? new ConsoleLogger() : new SilentLogger())
    .compile();
  await moduleRef.init();
  return moduleRef;
}

/** The most intervals [start, end) of one key that overlap at any instant. */
function maxOverlap(list: Run[]): number {
  const edges = list.flatMap((run) => [
    { at: run.start, d: 1 },
    { at: run.end, d: -1 },
  ]);
  // An end at the same millisecond as a start comes first: [start, end) intervals.
  edges.sort((a, b) => a.at - b.at || a.d - b.d);
  let open = 0;
  let most = 0;
  for (const edge of edges) {
    open += edge.d;
    most = Math.max(most, open);
  }
  return most;
}

/** The most starts in any window [t, t + per). */
function maxStartsInWindow(list: Run[], perMs: number): number {
  const starts = list.map((run) => run.start).sort((a, b) => a - b);
  let most = 0;
  let first = 0;
  for (let last = 0; last < starts.length; last++) {
    while (starts[last] - starts[first] >= perMs) first++;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describeWithServer('shared limits across three instances (real time)', () => {
  let db: TestDatabase;
  let instances: TestingModule[];
  const query = <T = any>(sql: string, params?: unknown[]): Promise<T[]> =>
    instances[0].get(DelayService)['runtime'].ctx.db.pool.rows(sql, params ?? []);

  beforeAll(async () => {
    db = await createTestDatabase();
    instances = [];
    for (const name of ['a', 'b', 'c']) instances.push(await startInstance(db, `limits-${name}`));
    await query(`CREATE TABLE limited_effect (task_id bigint NOT NULL)`);
  });

  afterAll(async () => {
    for (const moduleRef of instances ?? []) await moduleRef.close();
    await db?.drop();
  });

  it('never exceeds a per-key concurrency or rate, charges nothing for waiting, and lets other keys and types through', async () => {
    runs.length = 0;
    const delay = instances.map((moduleRef) => moduleRef.get(DelayService));
    const dueAt = Date.now() + 1500;
    // 10,000 tasks over 20 merchants: m0 has 1,000 (10 s at its rate), the others ~474 each.
    const requests = Array.from({ length: 10_000 }, (_, i) => ({
      type: 'test.partner-call',
      payload: { merchant: i < 1000 ? 'm0' : `m${1 + (i % 19)}` },
      runAt: dueAt,
    }));
    for (let i = 0; i < 3; i++) await delay[i].scheduleMany(requests.filter((_, j) => j % 3 === i));
    // An unlimited type due while the burst waits on its limits.
    const free = Array.from({ length: 300 }, (_, i) => ({
      type: 'test.free',
      runAt: dueAt + 500 + i * 10,
    }));
    await delay[1].scheduleMany(free);

    await waitFor(
      async () => runs.filter((run) => run.type === 'test.partner-call').length >= 10_000,
      180_000,
      '10,000 limited runs',
    );
    const limited = runs.filter((run) => run.type === 'test.partner-call');
    const byKey = new Map<string, Run[]>();
    for (const run of limited) byKey.set(run.key, [...(byKey.get(run.key) ?? []), run]);
    expect(byKey.size).toBe(20);
    for (const [key, list] of byKey) {
      expect({ key, overlap: maxOverlap(list) }).toEqual({
        key,
        overlap: expect.any(Number),
      });
      expect(maxOverlap(list)).toBeLessThanOrEqual(CONCURRENCY);
      expect(maxStartsInWindow(list, PER_MS)).toBeLessThanOrEqual(STARTS);
    }
    // The limits were reached, not merely respected by a slow engine.
    expect(maxStartsInWindow(byKey.get('m0')!, PER_MS)).toBeGreaterThanOrEqual(STARTS * 0.5);

    // Each task once, each at its first attempt: waiting is not charged.
    // A handler is recorded in `runs` before its claim commits: the last
    // claims' effects are counted once they have committed (or 30 s on).
    const countEffects = async () =>
      (
        await query<{ effects: string; distinct: string }>(
          `SELECT count(*) AS effects, count(DISTINCT task_id) AS distinct FROM limited_effect e
           JOIN delayed_task t ON t.id = e.task_id WHERE t.type = 'test.partner-call'`,
        )
      )[0];
    let counted = await countEffects();
    for (
      const settleBy = Date.now() + 30_000;
      Number(counted.effects) < 10_000 && Date.now() < settleBy;
    ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      counted = await countEffects();
    }
    const { effects, distinct } = counted;
    expect(Number(effects)).toBe(10_000);
    expect(Number(distinct)).toBe(10_000);
    expect(limited.every((run) => run.attempt === 1)).toBe(true);
    const [{ charged }] = await query<{ charged: string }>(
      `SELECT count(*) AS charged FROM delayed_task WHERE type = 'test.partner-call' AND attempts <> 1`,
    );
    expect(Number(charged)).toBe(0);

    // No head-of-line blocking: the unlimited type ran while m0 was still
    // waiting on its rate, and m0's wait held up no other merchant: most of
    // their runs (9,000, at no rate of their own that binds) started while m0
    // still had tasks waiting. (Not "all finished before m0": their pace is
    // the machine's, m0's its rate's; on a loaded machine the last of them
    // may end a moment after m0's 10 s.)
    await waitFor(
      async () => runs.filter((run) => run.type === 'test.free').length >= 300,
      30_000,
      'the free tasks',
    );
    const lastOf = (list: Run[]) => Math.max(...list.map((run) => run.end));
    const m0Done = lastOf(byKey.get('m0')!);
    expect(lastOf(runs.filter((run) => run.type === 'test.free'))).toBeLessThan(m0Done);
    const others = limited.filter((run) => run.key !== 'm0');
    const m0LastStart = Math.max(...byKey.get('m0')!.map((run) => run.start));
    expect(others.filter((run) => run.start < m0LastStart).length).toBeGreaterThan(
      others.length / 2,
    );
  }, 240_000);

  it('pauses a type on every instance and runs its tasks on resume, in due order, each once', async () => {
    runs.length = 0;
    const limits = instances[2].get(DelayLimits);
    const delay = instances[0].get(DelayService);
    await limits.pause('test.free');
    const dueAt = Date.now() + 300;
    await delay.scheduleMany(
      Array.from({ length: 200 }, (_, i) => ({ type: 'test.free', runAt: dueAt + i })),
    );
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(runs.filter((run) => run.type === 'test.free')).toHaveLength(0);
    const paused = await instances[1].get(DelayLimits).get('test.free');
    expect(paused.paused).toBe(true);
    expect(paused.waiting).toBe(200);

    await limits.resume('test.free');
    await waitFor(
      async () => runs.filter((run) => run.type === 'test.free').length >= 200,
      30_000,
      'the resumed tasks',
    );
    const [{ dup }] = await query<{ dup: string }>(
      `SELECT count(*) - count(DISTINCT task_id) AS dup FROM limited_effect`,
    );
    expect(Number(dup)).toBe(0);
  }, 60_000);
});
