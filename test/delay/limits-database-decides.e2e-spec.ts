import { Injectable, Module } from '@nestjs/common';
import { DelayAdmin, DelayLimits, DelayedTaskHandler, type TaskContext } from 'nest-delay';
import { ManualClock } from 'nest-delay/testing';
import pg from 'pg';
import { releaseExpiredInstances } from '../../packages/nest-delay/src/lease/lease-statements.js';
import { lineCheckInScript } from '../../packages/nest-delay/src/limits/limit-statements.js';
import {
  PreparedStatements,
  claimConnection,
} from '../../packages/nest-delay/src/store/claim-connection.js';
import type { GateClaim } from '../../packages/nest-delay/src/limits/gate-line.types.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { SECOND, createDelayTestApp, type DelayTestApp } from './delay-test-app.js';

/**
 * Issue 27: what every instance must agree on (a rate set at run time, a
 * pause, a credit's holder) is decided by the database in the claim, not by
 * an instance's cached picture.
 */

/** Each start, in order: its type, its payload's n, and whether pause() had returned by then. */
const starts: Array<{ type: string; n: number; afterPause: boolean }> = [];
let pauseReturned = false;
/** While set, a handler whose payload asks to `hold` waits on it, until openHold(). */
let hold: Promise<void> | undefined;
let openHold: () => void = () => undefined;
function holdHandlers() {
  hold = new Promise<void>((resolve) => (openHold = resolve));
}

@Injectable()
class Handlers {
  @DelayedTaskHandler('dd.free')
  free(payload: { n: number }) {
    starts.push({ type: 'dd.free', n: payload.n, afterPause: pauseReturned });
  }

  @DelayedTaskHandler('dd.seated', {
    limit: { concurrency: 1, key: (payload: { k: string }) => payload.k },
  })
  async seated(payload: { n: number; hold?: boolean }) {
    starts.push({ type: 'dd.seated', n: payload.n, afterPause: pauseReturned });
    if (payload.hold) await hold;
  }

  // Each start records its transaction, in it.
  @DelayedTaskHandler('dd.slow', { limit: { concurrency: 1 } })
  async slow(payload: { n: number }, context: TaskContext) {
    await context.manager.query(
      `INSERT INTO slow_start (payload, tx) VALUES ($1, txid_current()::text)`,
      [JSON.stringify(payload)],
    );
    await new Promise((resolve) => setTimeout(resolve, 600));
  }

  // One seat: its tasks go in one claim, which the first holds open.
  @DelayedTaskHandler('dd.paced', { limit: { concurrency: 1, rate: { starts: 10, per: '1h' } } })
  async paced(payload: { n: number; hold?: boolean }, context: TaskContext) {
    void context;
    starts.push({ type: 'dd.paced', n: payload.n, afterPause: pauseReturned });
    if (payload.hold) await hold;
  }
}

@Module({ providers: [Handlers] })
class HandlersModule {}

// Two versions of one app's code: the first declares a rate on dd.versioned, the second none.
@Injectable()
class VersionOne {
  @DelayedTaskHandler('dd.versioned', { limit: { rate: { starts: 1, per: '1h' } } })
  versioned(payload: { n: number }) {
    starts.push({ type: 'dd.versioned', n: payload.n, afterPause: false });
  }
}
@Module({ providers: [VersionOne] })
class VersionOneModule {}

@Injectable()
class VersionTwo {
  @DelayedTaskHandler('dd.versioned')
  versioned(payload: { n: number }) {
    starts.push({ type: 'dd.versioned', n: payload.n, afterPause: false });
  }
}
@Module({ providers: [VersionTwo] })
class VersionTwoModule {}

const ofType = (type: string) => starts.filter((s) => s.type === type).map((s) => s.n);

async function until(what: string, check: () => boolean | Promise<boolean>) {
  for (let i = 0; i < 1000; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

let db: TestDatabase;
const apps: DelayTestApp[] = [];
async function boot(
  instanceId: string,
  clock: ManualClock,
  concurrency = 4,
  module: new () => object = HandlersModule,
) {
  const app = await createDelayTestApp(
    db,
    { instanceId, concurrency, lease: '1h' },
    { clock, modules: [{ module }] },
  );
  apps.push(app);
  return app;
}

beforeAll(async () => {
  db = await createTestDatabase();
});
afterEach(async () => {
  // A test that failed midway must not leave a handler held or an instance running.
  openHold();
  // Nor a pause or a limit set at run time behind it.
  await apps[0]?.query(`UPDATE delay_type_limit SET paused_at = NULL, overridden = false,
    concurrency = NULL, rate_starts = NULL, rate_per_ms = NULL`);
  for (const app of apps.splice(0)) await app.close().catch(() => undefined);
});
afterAll(async () => {
  await db?.drop();
});
beforeEach(() => {
  starts.length = 0;
  pauseReturned = false;
  hold = undefined;
});

describe('a rate set at run time on another instance', () => {
  it('binds an idle instance at once: it claims no task of the type without a credit', async () => {
    const clock = new ManualClock();
    const b = await boot('dd-b', clock); // booted, idle: its picture says dd.free is unlimited
    const a = await boot('dd-a', clock);
    await a.moduleRef.get(DelayLimits).set('dd.free', { rate: { starts: 1, per: '1h' } });
    await a.close();
    apps.splice(apps.indexOf(a), 1);
    const base = clock.now();
    for (let n = 0; n < 3; n++)
      await b.delay.schedule({ type: 'dd.free', payload: { n }, runAt: base + SECOND });
    for (let s = 1; s <= 5; s++) await b.tester.advanceTo(base + s * SECOND);
    // One start on the one credit; which of the three due together is not the point here
    // (a rate line is spread over several claims at once, which race for the credit).
    expect(ofType('dd.free')).toHaveLength(1);
    await b.moduleRef.get(DelayLimits).reset('dd.free');
  });
});

describe('two versions of the code declaring different limits (a rolling deploy)', () => {
  it('apply the limits of the last to boot, on both', async () => {
    const clock = new ManualClock();
    const one = await boot('dd-v1', clock, 4, VersionOneModule);
    const two = await boot('dd-v2', clock, 4, VersionTwoModule);
    const schedule = async (via: DelayTestApp, from: number) => {
      const base = clock.now();
      for (let n = from; n < from + 3; n++)
        await via.delay.schedule({ type: 'dd.versioned', payload: { n }, runAt: base + SECOND });
      return base;
    };
    // Version two booted last and declares no limit: version one's rate no longer holds.
    let base = await schedule(one, 0);
    await one.tester.advanceTo(base + SECOND);
    expect(ofType('dd.versioned').sort()).toEqual([0, 1, 2]);
    const limits = two.moduleRef.get(DelayLimits);
    expect((await limits.get('dd.versioned')).declaredBy?.instanceId).toBe('dd-v2');

    // Version one boots again (a rollback): its rate holds on version two as well.
    await one.close();
    apps.splice(apps.indexOf(one), 1);
    const again = await boot('dd-v1', clock, 4, VersionOneModule);
    expect((await limits.get('dd.versioned')).declared).toEqual({
      concurrency: null,
      rate: { starts: 1, perMs: 3_600_000 },
    });
    await again.close();
    apps.splice(apps.indexOf(again), 1);
    starts.length = 0;
    base = await schedule(two, 3);
    for (let s = 1; s <= 5; s++) await two.tester.advanceTo(base + s * SECOND);
    // One start on the one credit of the hour, though version two's code declares no limit.
    expect(ofType('dd.versioned')).toHaveLength(1);
  });
});

describe('a pause while a gate claim runs', () => {
  it('starts no handler of the type after pause() returned', async () => {
    const clock = new ManualClock();
    const app = await boot('dd-pause', clock);
    holdHandlers();
    const base = clock.now();
    // One line (key a), one seat: whichever starts first holds it, and its claim, open.
    for (let n = 0; n < 5; n++)
      await app.delay.schedule({
        type: 'dd.seated',
        payload: { n, k: 'a', hold: true },
        runAt: base + SECOND,
        entity: 'pause:a',
      });
    clock.advance(SECOND);
    const running = app.tester.runDue();
    await until('the first handler', () => starts.length === 1);
    const paused = app.moduleRef
      .get(DelayLimits)
      .pause('dd.seated')
      .then(() => (pauseReturned = true));
    // Let the claim go on once the pause has returned, or is waiting for it.
    await Promise.race([
      paused,
      until('the pause to wait', async () => {
        const [{ waiting }] = await app.query<{ waiting: number }>(
          // pg_locks lists every database's locks: only this one's (suites run side by side).
          `SELECT count(*)::int AS waiting FROM pg_locks
           WHERE locktype = 'advisory' AND NOT granted
             AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
        );
        return waiting > 0;
      }),
    ]);
    openHold();
    await paused;
    await running;
    await app.tester.advance(SECOND);
    expect(starts.filter((s) => s.afterPause)).toEqual([]);
    // The claim asked before each start whether a pause waited: it stopped
    // after the one handler running when the pause came, and put back the rest.
    expect(ofType('dd.seated')).toHaveLength(1);
    const limits = app.moduleRef.get(DelayLimits);
    expect((await limits.get('dd.seated')).waiting).toBe(4);
    await limits.resume('dd.seated');
    await app.tester.runDue();
    expect(ofType('dd.seated').sort()).toEqual([0, 1, 2, 3, 4]);
    // Put back as they were: each counted one attempt, the one that ran, and
    // its timeline shows that one start only.
    const attempts = await app.query<{ attempts: number }>(
      `SELECT attempts FROM delayed_task WHERE type = 'dd.seated' AND executed_at IS NOT NULL`,
    );
    expect(attempts.map((row) => row.attempts)).toEqual([1, 1, 1, 1, 1]);
    const { entries } = await app.moduleRef.get(DelayAdmin).timeline('pause:a');
    const startsByTask = new Map<string, number>();
    for (const entry of entries.filter((e) => e.event === 'started'))
      startsByTask.set(entry.taskId, (startsByTask.get(entry.taskId) ?? 0) + 1);
    expect([...startsByTask.values()]).toEqual([1, 1, 1, 1, 1]);
  });
});

describe("a gate claim's line check while pause() and resume() take turns", () => {
  it('lets no claim through whose type a pause had committed before the claim held its pause lock', async () => {
    const app = await boot('dd-race', new ManualClock());
    const limits = app.moduleRef.get(DelayLimits);
    // The opening of a gate's claim as the engine sends it, on a connection of its own.
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    const source = {
      dataSource: undefined,
      prepared: new PreparedStatements(true),
      connect: () => pool.connect(),
    };
    const gated = {
      line: { type: 'dd.seated', key: 'race' },
      declared: { concurrency: 1, rate: null },
    } as GateClaim;
    let toggling = true;
    const toggle = (async () => {
      while (toggling) {
        await limits.pause('dd.seated');
        await limits.resume('dd.seated');
      }
    })();
    let passed = 0;
    let refused = 0;
    const through: unknown[] = [];
    try {
      // Behaviour, not timing: the loop only gives the turns many chances to meet.
      for (let i = 0; i < 1500; i++) {
        const connection = await claimConnection(source);
        const check = lineCheckInScript(connection.script, gated, 'dd-race', undefined);
        const replies = await connection.begin('', 60_000, check);
        const [{ refused: answer }] = replies[replies.length - 1] as Array<{ refused: unknown }>;
        const [{ paused_at: pausedAt }] = await connection.sql.rows<{ paused_at: Date | null }>(
          `SELECT paused_at FROM delay_type_limit WHERE type = $1`,
          ['dd.seated'],
        );
        await connection.commit('SELECT 1');
        await connection.release();
        if (answer !== null) refused++;
        else {
          passed++;
          // The claim holds the pause lock shared: no pause commits until it ends,
          // so one read now shows one that committed before the check, which let it through.
          if (pausedAt !== null) through.push(pausedAt);
        }
      }
    } finally {
      toggling = false;
      await toggle;
      await pool.end();
    }
    expect(through).toEqual([]);
    expect(passed).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
  });
});

describe('a gate claim whose handlers outlast a second', () => {
  it('starts no next task once it has run a second: the rest start in a claim of their own, each once', async () => {
    const clock = new ManualClock();
    const app = await boot('dd-slow', clock, 2);
    await app.query(`CREATE TABLE slow_start (payload jsonb NOT NULL, tx text NOT NULL)`);
    const base = clock.now();
    // One seat: the three wait in one line and go to one claim.
    for (let n = 0; n < 3; n++)
      await app.delay.schedule({ type: 'dd.slow', payload: { n }, runAt: base + SECOND });
    clock.advance(SECOND);
    await app.tester.runDue();
    const rows = await app.query<{ n: number; tx: string }>(
      `SELECT (payload->>'n')::int AS n, tx FROM slow_start ORDER BY n`,
    );
    expect(rows.map((row) => row.n)).toEqual([0, 1, 2]);
    // 0 and 1 took 1.2 s together: 2 did not start in their transaction.
    expect(rows[2].tx).not.toBe(rows[0].tx);
    const attempts = await app.query<{ attempts: number }>(
      `SELECT attempts FROM delayed_task WHERE type = 'dd.slow'`,
    );
    expect(attempts.map((row) => row.attempts)).toEqual([1, 1, 1]);
  });
});

describe('one worker (concurrency: 1)', () => {
  it('gives gate claims and batches turns: an unlimited task does not wait behind every line', async () => {
    const clock = new ManualClock();
    const app = await boot('dd-one', clock, 1);
    holdHandlers();
    const base = clock.now();
    // Three lines (keys a, b, c) of two tasks each; a's first holds the only worker.
    for (const [n, k] of [
      [0, 'a'],
      [1, 'a'],
      [2, 'b'],
      [3, 'b'],
      [4, 'c'],
      [5, 'c'],
    ] as const)
      await app.delay.schedule({
        type: 'dd.seated',
        payload: { n, k, hold: n === 0 },
        runAt: base + SECOND,
      });
    await app.delay.schedule({ type: 'dd.free', payload: { n: 9 }, runAt: base + 2 * SECOND });
    clock.advance(SECOND);
    const first = app.tester.runDue();
    await until('the first handler', () => starts.length === 1);
    clock.advance(SECOND);
    const second = app.tester.runDue();
    // The free task is queued behind the gate's claim before it ends.
    await until('the free task queued', async () => {
      const runtime = app.delay['runtime'];
      return runtime.dispatcher.queuedCount > 0;
    });
    openHold();
    await first;
    await second;
    await app.tester.runDue();
    const order = starts.map((s) => (s.type === 'dd.free' ? 'free' : `${s.n}`));
    expect(order).toHaveLength(7);
    // Right after line a's claim, not after lines b and c.
    expect(order.indexOf('free')).toBeLessThan(order.indexOf('4'));
  });
});

describe('a takeover while a gate claim with rate credits runs', () => {
  it('waits for the claim to end: the stalled instance starts no handler on reaped credits', async () => {
    const clock = new ManualClock();
    // One worker: the three fire in one batch and wait in one line, taken by one claim.
    const app = await boot('dd-stalled', clock, 1);
    holdHandlers();
    const base = clock.now();
    for (let n = 0; n < 3; n++)
      await app.delay.schedule({
        type: 'dd.paced',
        payload: { n, hold: n === 0 },
        runAt: base + SECOND,
      });
    clock.advance(SECOND);
    const running = app.tester.runDue();
    await until('the first handler', () => starts.length === 1);
    // Another instance takes this one over (its lease looks expired): as a heartbeat would.
    const pool = app.delay['runtime'].ctx.db.pool;
    await releaseExpiredInstances(pool, ['dd-stalled'], new Date(base + 10 * 3_600_000));
    const [{ n: left }] = await app.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM delay_instance WHERE id = 'dd-stalled'`,
    );
    const takenOver = left === 0;
    const startsBefore = starts.length;
    openHold();
    await running;
    const startedAfterTakeover = starts
      .slice(startsBefore)
      .map((s) => s.n)
      .sort();
    expect({ takenOver, startedAfterTakeover }).toEqual({
      takenOver: false,
      startedAfterTakeover: [1, 2],
    });
    // Once its claim has ended, the takeover goes through.
    await releaseExpiredInstances(pool, ['dd-stalled'], new Date(base + 10 * 3_600_000));
    const [{ n: after }] = await app.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM delay_instance WHERE id = 'dd-stalled'`,
    );
    expect(after).toBe(0);
  });
});
