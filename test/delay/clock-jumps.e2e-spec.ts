import { ManualClock } from 'nest-delay/testing';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';
import {
  CapturingLogger,
  createDelayTestApp,
  DAY,
  HOUR,
  lastTaskId,
  MINUTE,
  SECOND,
  type DelayTestApp,
} from './delay-test-app.js';

// Two instances on one database sharing one ManualClock, which jumps: forward
// by days (a suspended host, a clock set right after weeks off) and back by
// minutes (a wall clock set back; the default SystemClock is monotonic and
// never does that, a Clock of the user's own might). Judged in the database:
// no task ran before its due time by the clock that ran it, every task ran
// exactly once, and the jump stole no live instance's lease.
describeWithServer('the clock jumps', () => {
  const setup = useInstancesOnOneClock(['a', 'b']);
  const logs = setup.logs;
  let clock: ManualClock;
  let a: DelayTestApp;
  let b: DelayTestApp;
  beforeAll(
    () =>
      ({
        clock,
        apps: [a, b],
      } = setup.get()),
  );

  /**
   * Moves the shared clock, waits for both heartbeats (as a process would
   * beat while a test sleeps) and runs what fell due on both.
   */
  const step = async (move: () => void) => {
    move();
    await a.tester.refresh();
    await b.tester.refresh();
    await Promise.all([a.tester.runDue(), b.tester.runDue()]);
  };
  const instances = async () =>
    (await a.query<{ id: string }>(`SELECT id FROM delay_instance ORDER BY id`)).map((r) => r.id);
  /** Per task above `after`: due time, how often it ran, when and where (by the effect rows). */
  const outcome = (after: string) =>
    a.query<{ id: string; due_at: Date; runs: number; first_at: Date | null; by: string | null }>(
      `SELECT t.id, t.due_at, count(e.id)::int AS runs, min(e.at) AS first_at, min(e.instance) AS by
       FROM delayed_task t LEFT JOIN effect e ON e.task_id = t.id
       WHERE t.id > $1 GROUP BY t.id ORDER BY t.id`,
      [after],
    );
  const schedule = (app: DelayTestApp, delays: number[]) =>
    app.delay.scheduleMany(delays.map((delay) => ({ type: 'test.effect', delay })));

  it('forward by days: what fell due runs once, nothing later than now runs, no live lease is taken', async () => {
    const after = await lastTaskId(a);
    // Near tasks, held in each instance's wheel at the jump, and far ones up to three days out.
    await schedule(a, [2 * SECOND, 20 * SECOND, 40 * MINUTE, 20 * HOUR, 50 * HOUR, 70 * HOUR]);
    await schedule(b, [3 * SECOND, 30 * SECOND, 45 * MINUTE, 21 * HOUR, 51 * HOUR, 71 * HOUR]);
    const holders = await a.query<{ id: string; locked_by: string | null }>(
      `SELECT id, locked_by FROM delayed_task WHERE id > $1 AND locked_by IS NOT NULL ORDER BY id`,
      [after],
    );
    expect(new Set(holders.map((h) => h.locked_by))).toEqual(new Set(['instance-a', 'instance-b']));
    logs.entries.length = 0;

    await step(() => clock.advance(DAY));

    expect(await instances()).toEqual(['instance-a', 'instance-b']);
    expect(warned(logs, /Took over/)).toEqual([]);
    expect(warned(logs, /clock moved/i).length).toBeGreaterThan(0);
    const rows = await outcome(after);
    const now = clock.now();
    for (const row of rows) {
      const due = row.due_at.getTime();
      expect({ id: row.id, runs: row.runs }).toEqual({ id: row.id, runs: due <= now ? 1 : 0 });
      if (row.first_at) expect(row.first_at.getTime()).toBeGreaterThanOrEqual(due);
    }
    // Each task held at the jump ran on the instance that held it.
    for (const held of holders) {
      expect(rows.find((r) => r.id === held.id)?.by).toBe(held.locked_by);
    }

    await step(() => clock.advance(2 * DAY));
    const end = await outcome(after);
    expect(end.filter((r) => r.runs !== 1)).toEqual([]);
    expect(end.filter((r) => r.first_at!.getTime() < r.due_at.getTime())).toEqual([]);
    expect(await instances()).toEqual(['instance-a', 'instance-b']);
  });

  it('back by minutes: nothing runs early by the stepped-back clock, everything runs once after', async () => {
    const after = await lastTaskId(a);
    const delays = Array.from({ length: 30 }, (_, i) => (i + 1) * 20 * SECOND); // 20 s .. 10 min
    await schedule(
      a,
      delays.filter((_, i) => i % 2 === 0),
    );
    await schedule(
      b,
      delays.filter((_, i) => i % 2 === 1),
    );
    // 4 minutes in steps shorter than the lease: time the heartbeats see pass.
    for (let i = 0; i < 12; i++) await step(() => clock.advance(20 * SECOND));
    const ranBefore = (await outcome(after)).filter((r) => r.runs > 0).length;
    expect(ranBefore).toBe(12); // due by +4 min: 20 s .. 240 s

    logs.entries.length = 0;
    await step(() => clock.rewind(3 * MINUTE)); // now +1 min
    // A task scheduled after the step, due before where the wheels had got to.
    const [late] = await schedule(a, [30 * SECOND]);
    await step(() => clock.advance(20 * SECOND));
    expect(await a.effects(late.id!)).toBe(0);
    expect((await outcome(after)).filter((r) => r.runs > 0).length).toBe(ranBefore);

    await step(() => clock.advance(10 * SECOND)); // the late task's due time
    expect(await a.effects(late.id!)).toBe(1);

    for (let i = 0; i < 30; i++) await step(() => clock.advance(20 * SECOND));
    const end = await outcome(after);
    expect(end).toHaveLength(31);
    expect(end.filter((r) => r.runs !== 1)).toEqual([]);
    expect(end.filter((r) => r.first_at!.getTime() < r.due_at.getTime())).toEqual([]);
    expect(await instances()).toEqual(['instance-a', 'instance-b']);
    expect(warned(logs, /Took over/)).toEqual([]);
  });
});

// An instance that dies is still taken over across a jump, a lease after it.
describeWithServer('the clock jumps while an instance is dead', () => {
  const setup = useInstancesOnOneClock(['a', 'c']);
  const logs = setup.logs;
  let clock: ManualClock;
  let a: DelayTestApp;
  let c: DelayTestApp;
  beforeAll(
    () =>
      ({
        clock,
        apps: [a, c],
      } = setup.get()),
  );

  it('takes over its tasks a lease after the jump, each once', async () => {
    const after = await lastTaskId(a);
    const results = await c.delay.scheduleMany(
      Array.from({ length: 20 }, (_, i) => ({ type: 'test.effect', delay: 2 * SECOND + i * 100 })),
    );
    expect(results.every((r) => c.tester.isHeld(r.id!))).toBe(true);
    await c.tester.crash();

    clock.advance(DAY);
    await a.tester.refresh();
    await a.tester.runDue();
    // Right after the jump, c's lease is given its chance to be renewed.
    expect(await a.effects(results[0].id!)).toBe(0);
    expect(warned(logs, /Took over/)).toEqual([]);

    clock.advance(31 * SECOND);
    await a.tester.refresh();
    await a.tester.runDue();
    const runs = await a.query<{ task_id: string; n: number; instance: string }>(
      `SELECT task_id, count(*)::int AS n, min(instance) AS instance FROM effect
       WHERE task_id > $1 GROUP BY task_id`,
      [after],
    );
    expect(runs).toHaveLength(20);
    expect(runs.every((r) => r.n === 1 && r.instance === 'instance-a')).toBe(true);
  });
});

/** Warnings logged so far that match `pattern`. */
function warned(logs: CapturingLogger, pattern: RegExp): string[] {
  return logs.messages('warn').filter((message) => pattern.test(message));
}

/**
 * Instances `instance-<name>` on one fresh database and one ManualClock, with
 * a 30 s lease, for the enclosing describe; their warnings go to `logs`.
 */
function useInstancesOnOneClock(names: string[]) {
  const logs = new CapturingLogger();
  let db: TestDatabase | undefined;
  let clock: ManualClock | undefined;
  const apps: DelayTestApp[] = [];
  beforeAll(async () => {
    db = await createTestDatabase();
    clock = new ManualClock();
    for (const name of names) {
      apps.push(
        await createDelayTestApp(
          db,
          { instanceId: `instance-${name}`, lease: '30s' },
          { clock, logger: logs },
        ),
      );
    }
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await db?.drop();
  });
  return { logs, get: () => ({ clock: clock!, apps }) };
}
