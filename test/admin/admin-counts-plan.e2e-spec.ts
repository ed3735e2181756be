// Package-internal: the counting and listing statements themselves, to read their query plans.
import { countTasks, listInstances } from '../../packages/nest-delay/src/admin/admin-statements.js';
import type { Sql } from '../../packages/nest-delay/src/store/sql.js';
import { createDelayTestApp, type DelayTestApp } from '../delay/delay-test-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { planRoot, tableReads, type PlanNode } from '../support/query-plans.js';

/** Runs a statement under EXPLAIN ANALYZE and returns its plan's root. */
function explaining(t: DelayTestApp, plans: PlanNode[]): Sql {
  return {
    rows: async <T>(text: string, params: unknown[]) => {
      const [row] = await t.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, params);
      plans.push(planRoot(row));
      return [] as T[];
    },
  };
}

// The dashboards' complaint: counting queries that scan the whole table on
// every page load. These read through each state's partial index and stop at
// the cap, however many rows the table has.
describe('admin counts on a large table', () => {
  let db: TestDatabase;
  let t: DelayTestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await createDelayTestApp(db);
    await t.query(
      `INSERT INTO delayed_task (type, due_at, executed_at, cancelled_at, dead_at, locked_by, created_at, updated_at)
       SELECT 'test.effect', '2030-01-01'::timestamptz + g * interval '1 second',
              CASE WHEN g % 4 = 1 THEN now() END, CASE WHEN g % 4 = 2 THEN now() END,
              CASE WHEN g % 4 = 3 THEN now() END, CASE WHEN g % 4 = 0 THEN 'gone' END, now(), now()
       FROM generate_series(1, 40000) g`,
    );
    await t.query(`ANALYZE delayed_task`);
  }, 120_000);

  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  // 10,000 rows a state: a cap below that, and the default one far above it.
  it.each([1_001, 100_001])(
    'reads at most %d rows of each state, each through an index',
    async (limit) => {
      const plans: PlanNode[] = [];
      await countTasks(explaining(t, plans), limit);
      const reads = tableReads(plans[0]);
      expect(reads).toHaveLength(4);
      for (const read of reads) {
        expect(read['Node Type']).toMatch(/^Index( Only)? Scan$/);
        expect(read['Actual Rows']).toBeLessThanOrEqual(limit);
      }
      expect(new Set(reads.map((r) => r['Index Name']))).toEqual(
        new Set([
          'delayed_task_pending_due_idx',
          'delayed_task_finished_idx',
          'delayed_task_dead_idx',
        ]),
      );
    },
    60_000,
  );

  it('counts what each instance holds through the lease index, up to the cap', async () => {
    await t.query(
      `INSERT INTO delay_instance (id, started_at, heartbeat_at, lease_until) VALUES ('gone', now(), now(), now())`,
    );
    const plans: PlanNode[] = [];
    await listInstances(explaining(t, plans), 1001);
    const reads = tableReads(plans[0]);
    expect(reads.map((r) => r['Index Name'])).toEqual(['delayed_task_locked_by_idx']);
    expect(reads[0]['Actual Rows']).toBeLessThanOrEqual(1001);
  }, 60_000);
});
