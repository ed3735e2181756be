// Package-internal: the claim statement itself, to read its query plan.
import { claimTasks } from '../../packages/nest-delay/src/claim/claim-statements.js';
import { earlierOccurrenceRetrying } from '../../packages/nest-delay/src/schedules/recurring-statements.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { HOUR, createDelayTestApp, lastTaskId, type DelayTestApp } from './delay-test-app.js';

/** Every index the plan of a statement uses, walked out of EXPLAIN (FORMAT JSON). */
function indexesIn(plan: unknown): string[] {
  if (Array.isArray(plan)) return plan.flatMap(indexesIn);
  if (plan === null || typeof plan !== 'object') return [];
  const node = plan as Record<string, unknown>;
  const own = typeof node['Index Name'] === 'string' ? [node['Index Name']] : [];
  return [...own, ...Object.values(node).flatMap(indexesIn)];
}

/** Sequential scans of `relation` in an EXPLAIN (FORMAT JSON) plan. */
function seqScansOf(plan: unknown, relation: string): number {
  if (Array.isArray(plan)) return plan.reduce((n: number, p) => n + seqScansOf(p, relation), 0);
  if (plan === null || typeof plan !== 'object') return 0;
  const node = plan as Record<string, unknown>;
  const own = node['Node Type'] === 'Seq Scan' && node['Relation Name'] === relation ? 1 : 0;
  return Object.values(node).reduce((n: number, v) => n + seqScansOf(v, relation), own);
}

describe('a large delayed_task table', () => {
  let db: TestDatabase;
  let t: DelayTestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await createDelayTestApp(db, { window: '1h' });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('bounded memory: holds none of 200,000 tasks due beyond the window, and loads each as it comes within it', async () => {
    const now = t.clock.now();
    const after = await lastTaskId(t);
    const heldBefore = t.tester.held;
    await t.query(
      `INSERT INTO delayed_task (type, payload, due_at, created_at, updated_at)
       SELECT 'test.effect', 'null', $1::timestamptz + interval '2 hours' + g * interval '100 milliseconds', $2, $2
       FROM generate_series(1, 200000) g`,
      [new Date(now), new Date(now)],
    );
    await t.tester.refresh();
    expect(t.tester.held).toBe(heldBefore);
    const leasedOfBulk = async () =>
      (
        await t.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM delayed_task
           WHERE id > $1 AND locked_by IS NOT NULL AND executed_at IS NULL`,
          [after],
        )
      )[0].n;
    expect(await leasedOfBulk()).toBe(0);

    // A task scheduled through the API within the window goes straight into the wheel;
    // one beyond it does not.
    const near = await t.delay.schedule({ type: 'test.effect', delay: '10m' });
    const far = await t.delay.schedule({ type: 'test.effect', delay: '5h' });
    expect(t.tester.isHeld(near.id)).toBe(true);
    expect(t.tester.isHeld(far.id)).toBe(false);
    expect(t.tester.held).toBe(heldBefore + 1);
    expect(near.lockedBy).not.toBeNull();
    expect(far.lockedBy).toBeNull();

    // One hour and one minute later the window's horizon is 2 h 1 m from the start:
    // it reaches the tasks with g × 100 ms < 60 s, that is g = 1..599.
    t.clock.advance(HOUR + 60_000);
    await t.tester.refresh();
    await t.tester.runDue();
    expect(t.tester.held).toBe(heldBefore + 599);
    // (`near` ran; `far`, due at 5 h, is not within the window yet.)
    expect(await leasedOfBulk()).toBe(599);
    expect(t.tester.isHeld(far.id)).toBe(false);
    expect((await t.delay.get({ id: near.id }))?.state).toBe('executed');
  }, 120_000);

  // 100,000 more tasks inserted at once and all due: the statistics do not
  // know them yet, which is when a planner is most tempted to scan the
  // due-order index and filter on id (190 ms a batch, instead of under 1 ms).
  it('a burst: the claim looks fired ids up by primary key, before statistics catch up', async () => {
    await t.query(`ALTER TABLE delayed_task SET (autovacuum_enabled = false)`);
    const now = new Date(t.clock.now());
    const inserted = await t.query<{ id: string }>(
      `INSERT INTO delayed_task (type, payload, due_at, created_at, updated_at)
       SELECT 'test.effect', 'null', $1::timestamptz - interval '1 minute', $1, $1
       FROM generate_series(1, 100000) RETURNING id`,
      [now],
    );
    const ids = inserted.slice(50_000, 50_050).map((row) => row.id);
    // The statement claimTasks runs, with its parameters, explained instead of run.
    let plan: unknown;
    await claimTasks(
      {
        rows: async <T>(text: string, params: unknown[]) => {
          const [row] = await t.query<{ 'QUERY PLAN': unknown }>(
            `EXPLAIN (FORMAT JSON) ${text}`,
            params,
          );
          plan = row['QUERY PLAN'];
          return [] as T[];
        },
      },
      ids,
      now,
      '0',
      false,
    );
    // delayed_task is reached by primary key (delay_attempt, a row per claim in flight, aside);
    // an occurrence's catch-up verdict looks at its schedule's other occurrences by their own
    // index. Never the due-order index, never a scan.
    const indexes = indexesIn(plan).filter((name) => name.startsWith('delayed_task'));
    expect(indexes).toContain('delayed_task_pkey');
    expect(
      indexes.filter(
        (name) => name !== 'delayed_task_pkey' && name !== 'delayed_task_occurrence_idx',
      ),
    ).toEqual([]);
    expect(seqScansOf(plan, 'delayed_task')).toBe(0);
  }, 60_000);

  it("an occurrence's overlap check finds its schedule's occurrences by their index, before statistics catch up", async () => {
    await t.query(`ALTER TABLE delayed_task SET (autovacuum_enabled = false)`);
    const now = new Date(t.clock.now());
    await t.query(
      `INSERT INTO delay_schedule (name, type, every_ms, catch_up, catch_up_cap, overlap, in_code, created_at, updated_at)
       VALUES ('window.overlap', 'test.effect', 1000, 'one', 1, 'skip', false, $1, $1)`,
      [now],
    );
    // Planned an hour ahead, as a one-second schedule is: thousands of pending occurrences.
    await t.query(
      `INSERT INTO delayed_task (type, payload, due_at, created_at, updated_at, schedule_name, occurrence_at)
       SELECT 'test.effect', 'null', $1::timestamptz + g * interval '1 second', $1, $1,
              'window.overlap', $1::timestamptz + g * interval '1 second'
       FROM generate_series(1, 100000) g`,
      [now],
    );
    let plan: unknown;
    await earlierOccurrenceRetrying(
      {
        rows: async <T>(text: string, params: unknown[]) => {
          const [row] = await t.query<{ 'QUERY PLAN': unknown }>(
            `EXPLAIN (FORMAT JSON) ${text}`,
            params,
          );
          plan = row['QUERY PLAN'];
          return [{ pending: false }] as T[];
        },
      },
      'window.overlap',
      new Date(now.getTime() + 50_000_000),
    );
    const indexes = indexesIn(plan).filter((name) => name.startsWith('delayed_task'));
    expect(new Set(indexes)).toEqual(new Set(['delayed_task_occurrence_idx']));
  }, 60_000);
});
