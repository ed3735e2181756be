import { CLAIM_TASKS } from '../../src/delay/sql/claim-tasks.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { createDelayTestApp, type DelayTestApp } from './delay-test-app.js';

/** Every index the plan of a statement uses, walked out of EXPLAIN (FORMAT JSON). */
function indexesIn(plan: unknown): string[] {
  if (Array.isArray(plan)) return plan.flatMap(indexesIn);
  if (plan === null || typeof plan !== 'object') return [];
  const node = plan as Record<string, unknown>;
  const own = typeof node['Index Name'] === 'string' ? [node['Index Name']] : [];
  return [...own, ...Object.values(node).flatMap(indexesIn)];
}

describe('the claim statement under a burst', () => {
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

  // 100,000 tasks inserted at once and all due: the statistics still describe
  // an empty table, which is the moment a planner is most tempted to scan the
  // due-order index and filter on id (190 ms a batch, instead of under 1 ms).
  it('looks the fired ids up by primary key, even before statistics catch up', async () => {
    await t.query(`ALTER TABLE delayed_task SET (autovacuum_enabled = false)`);
    const now = new Date(t.clock.now());
    await t.query(
      `INSERT INTO delayed_task (type, payload, due_at, created_at, updated_at)
       SELECT 'test.effect', 'null', $1::timestamptz - interval '1 minute', $1, $1
       FROM generate_series(1, 100000)`,
      [now],
    );
    const ids = Array.from({ length: 50 }, (_, i) => 50_001 + i);
    const [{ 'QUERY PLAN': plan }] = await t.query(`EXPLAIN (FORMAT JSON) ${CLAIM_TASKS}`, [
      ids,
      now,
    ]);
    const indexes = indexesIn(plan);
    expect(indexes.length).toBeGreaterThan(0);
    expect(new Set(indexes)).toEqual(new Set(['delayed_task_pkey']));
  }, 60_000);
});
