import { CLAIM_TASKS } from '../../packages/nest-delay/src/sql/claim-tasks.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { createDelayTestApp, type DelayTestApp } from './delay-test-app.js';

const HOUR = 3_600_000;

/** Every index the plan of a statement uses, walked out of EXPLAIN (FORMAT JSON). */
function indexesIn(plan: unknown): string[] {
  if (Array.isArray(plan)) return plan.flatMap(indexesIn);
  if (plan === null || typeof plan !== 'object') return [];
  const node = plan as Record<string, unknown>;
  const own = typeof node['Index Name'] === 'string' ? [node['Index Name']] : [];
  return [...own, ...Object.values(node).flatMap(indexesIn)];
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
    await t.query(
      `INSERT INTO delayed_task (type, payload, due_at, created_at, updated_at)
       SELECT 'test.effect', 'null', $1::timestamptz + interval '2 hours' + g * interval '100 milliseconds', $2, $2
       FROM generate_series(1, 200000) g`,
      [new Date(now), new Date(now)],
    );
    await t.runtime.refresh();
    expect(t.runtime.wheel.size).toBe(0);

    // A task scheduled through the API within the window goes straight into the wheel;
    // one beyond it does not.
    const near = await t.delay.schedule({ type: 'test.effect', delay: '10m' });
    const far = await t.delay.schedule({ type: 'test.effect', delay: '5h' });
    expect(t.runtime.wheel.has(Number(near.id))).toBe(true);
    expect(t.runtime.wheel.has(Number(far.id))).toBe(false);
    expect(t.runtime.wheel.size).toBe(1);

    // One hour and one minute later the window's horizon is 2 h 1 m from the start:
    // it reaches the tasks with g × 100 ms < 60 s, that is g = 1..599.
    t.clock.advance(HOUR + 60_000);
    await t.runtime.refresh();
    await t.delay.drain();
    expect(t.runtime.wheel.size).toBe(599);
    const [{ leased }] = await t.query(
      `SELECT count(*)::int AS leased FROM delayed_task WHERE locked_by IS NOT NULL AND executed_at IS NULL`,
    );
    expect(leased).toBe(599);
    expect((await t.delay.get(near.id))?.state).toBe('executed');
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
    const ids = inserted.slice(50_000, 50_050).map((row) => Number(row.id));
    const [{ 'QUERY PLAN': plan }] = await t.query(`EXPLAIN (FORMAT JSON) ${CLAIM_TASKS}`, [
      ids,
      now,
    ]);
    const indexes = indexesIn(plan);
    expect(indexes.length).toBeGreaterThan(0);
    expect(new Set(indexes)).toEqual(new Set(['delayed_task_pkey']));
  }, 60_000);
});
