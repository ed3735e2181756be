// Package-internal: the orphan sweep's statements themselves, to read their plans.
import { releaseTasksOfMissingInstances } from '../../packages/nest-delay/src/lease/lease-statements.js';
import type { Sql } from '../../packages/nest-delay/src/store/sql.js';
import { createDelayTestApp, type DelayTestApp } from './delay-test-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { planRoot, rowsRead, type PlanNode } from '../support/query-plans.js';

const HELD = 40_000;
const OVERDUE = 30;
const ORPHANED = 500;

// An instance at 2,000 tasks/s holds about 100,000 tasks in its window. The
// orphan sweep (every sixth heartbeat, and at start) read all of them, and
// every other instance's, to find none: 1.6 s of the server a call in the
// long-horizon bench. It must read what it frees, whatever the others hold.
describe('the orphan sweep on a large window', () => {
  let db: TestDatabase;
  let t: DelayTestApp;
  /**
   * Runs each statement under EXPLAIN ANALYZE (so for real: an UPDATE
   * updates), keeps its plan, then runs it again for the rows it returns.
   */
  async function plans(run: (sql: Sql) => Promise<unknown>): Promise<PlanNode[]> {
    const roots: PlanNode[] = [];
    await run({
      rows: async <T>(text: string, params: unknown[]) => {
        const [row] = await t.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, params);
        roots.push(planRoot(row));
        return (await t.query(text, params)) as T[];
      },
    });
    return roots;
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await createDelayTestApp(db);
    await t.query(
      `INSERT INTO delay_instance (id, started_at, heartbeat_at, lease_until)
       VALUES ('alive', now(), now(), now() + interval '1 day'), ('stale', now(), now(), now() - interval '1 hour')`,
    );
    // 'alive' holds HELD tasks due tomorrow and OVERDUE due an hour ago;
    // 'stale' (lease run out) and 'gone' (no row) hold ORPHANED pending
    // tasks each, and 'gone' as many executed ones, which stay as they are.
    await t.query(
      `INSERT INTO delayed_task (type, due_at, locked_by, created_at, updated_at)
       SELECT 'test.effect', now() + interval '1 day' + g * interval '1 second', 'alive', now(), now()
       FROM generate_series(1, $1::int) g
       UNION ALL
       SELECT 'test.effect', now() - interval '1 hour' + g * interval '1 second', 'alive', now(), now()
       FROM generate_series(1, $2::int) g
       UNION ALL
       SELECT 'test.effect', now() + g * interval '1 second', holder, now(), now()
       FROM generate_series(1, $3::int) g, unnest(ARRAY['stale', 'gone']) AS holder`,
      [HELD, OVERDUE, ORPHANED],
    );
    await t.query(
      `INSERT INTO delayed_task (type, due_at, executed_at, locked_by, created_at, updated_at)
       SELECT 'test.effect', now() - interval '1 day', now(), 'gone', now(), now()
       FROM generate_series(1, $1::int)`,
      [ORPHANED],
    );
    await t.query(`ANALYZE delayed_task`);
  }, 120_000);

  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('frees the pending tasks of instances without a live lease, reading only theirs', async () => {
    const roots = await plans((s) => releaseTasksOfMissingInstances(s, new Date()));
    expect(roots).toHaveLength(2);
    // Each holder found by one descent (a handful), then the two orphans' pending rows.
    expect(rowsRead(roots[0])).toBeLessThan(10);
    expect(rowsRead(roots[1])).toBeLessThan(2 * ORPHANED + 50);
    const held = await t.query(
      `SELECT locked_by, executed_at IS NULL AS pending, count(*)::int AS n
       FROM delayed_task WHERE locked_by IN ('alive', 'stale', 'gone')
       GROUP BY 1, 2 ORDER BY 1, 2`,
    );
    expect(held).toEqual([
      { locked_by: 'alive', pending: true, n: HELD + OVERDUE },
      { locked_by: 'gone', pending: false, n: ORPHANED },
    ]);
    const freed = await t.query(
      `SELECT count(*)::int AS n FROM delayed_task WHERE locked_by IS NULL AND executed_at IS NULL`,
    );
    expect(freed[0].n).toBe(2 * ORPHANED);
  }, 60_000);
});
