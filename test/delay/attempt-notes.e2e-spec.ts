import pg from 'pg';
import { DataSource } from 'typeorm';
import { delayMigrations, TaskOutcome, DelayedTaskHandler, type TaskContext } from 'nest-delay';
import { Injectable, Module } from '@nestjs/common';
// Internal statements, driven directly to interleave two claims as two instances would.
import { takeOrphanedNotes } from '../../packages/nest-delay/src/claim/attempt-notes.js';
import {
  ATTEMPT_LOCK_CLASS,
  attemptLockKey,
  claimTasks,
  NOTE,
} from '../../packages/nest-delay/src/claim/claim-statements.js';
import type { Sql } from '../../packages/nest-delay/src/store/sql.js';
import { writeCharge } from '../../packages/nest-delay/src/tasks/fate-statements.js';
import { charge } from '../../packages/nest-delay/src/tasks/task-transitions.js';
import { WindowPolicy } from '../../packages/nest-delay/src/tasks/window-policy.js';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';
import { useDelayTestApp, recordEffect, type DelayTestApp } from './delay-test-app.js';
import { planRoot, type PlanNode } from '../support/query-plans.js';

const sqlOf = (client: pg.PoolClient): Sql => ({
  rows: async <T>(text: string, params: unknown[]) =>
    (await client.query(text, params)).rows as T[],
});

/** A claim's note on its own (claims send it with their BEGIN): its id. */
async function recordAttempt(
  sql: Sql,
  instanceId: string,
  ids: string[],
  now: Date,
): Promise<string> {
  const [{ id }] = await sql.rows<{ id: string }>(
    `SELECT nextval(pg_get_serial_sequence('delay_attempt', 'id'))::text AS id`,
    [],
  );
  await sql.rows(NOTE, [id, instanceId, ids, now]);
  return id;
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

describeWithServer('attempt notes of live claims', () => {
  let db: TestDatabase;
  let pool: pg.Pool;

  beforeAll(async () => {
    db = await createTestDatabase();
    const dataSource = new DataSource({
      type: 'postgres',
      url: db.url,
      migrations: delayMigrations,
    });
    await dataSource.initialize();
    await dataSource.runMigrations();
    await dataSource.destroy();
    pool = new pg.Pool({ connectionString: db.url, max: 4 });
    // Idle clients are terminated when the database is dropped at the end.
    pool.on('error', () => undefined);
  });

  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  it('are never charged: a claim that overlaps another, still running, defers or skips, and charges nothing', async () => {
    const [{ id }] = (
      await pool.query(
        `INSERT INTO delayed_task (type, due_at, max_attempts, created_at, updated_at)
         VALUES ('x', now() - interval '1 s', 1, now(), now()) RETURNING id`,
      )
    ).rows;
    const now = new Date();
    const first = await pool.connect();
    const second = await pool.connect();
    try {
      // Both noted the task (two drainers read the same page); the first has not claimed yet.
      const firstNote = await recordAttempt(sqlOf(first), 'one', [id], now);
      const secondNote = await recordAttempt(sqlOf(second), 'two', [id], now);
      // In a batch, a task another note lists is left for a claim of its own, uncharged.
      await second.query('BEGIN');
      expect(await claimTasks(sqlOf(second), [id], now, secondNote, false)).toEqual({
        claimed: [],
        alone: [id],
        gated: [],
        passed: [],
        unhandled: [],
      });
      await second.query('COMMIT');
      const soloNote = await recordAttempt(sqlOf(second), 'two', [id], now);
      await second.query('BEGIN');
      // The first note's claim is alive (its session holds the lock): nothing to charge.
      expect(await takeOrphanedNotes(sqlOf(second), [id], soloNote)).toEqual([]);
      const alone = await claimTasks(sqlOf(second), [id], now, soloNote, true);
      await second.query('COMMIT');
      expect(alone.claimed).toMatchObject([{ id, attempts: 1, last_error: null }]);
      await first.query('BEGIN');
      expect(await claimTasks(sqlOf(first), [id], now, firstNote, false)).toEqual({
        claimed: [],
        alone: [],
        gated: [],
        passed: [],
        unhandled: [],
      });
      await first.query('COMMIT');
      expect((await pool.query(`SELECT count(*)::int AS n FROM delay_attempt`)).rows[0].n).toBe(0);
    } finally {
      first.release();
      second.release();
    }
  });

  it('tell of every id they could not lock whether it is still pending: moved later, or held by another transaction', async () => {
    const ids = (
      await pool.query<{ id: string }>(
        `INSERT INTO delayed_task (type, due_at, max_attempts, locked_by, created_at, updated_at)
         SELECT 'verdict', now() + CASE WHEN n = 1 THEN interval '1 hour' ELSE interval '-1 hour' END,
                1, 'here', now(), now()
         FROM generate_series(0, 3) n ORDER BY n RETURNING id::text`,
      )
    ).rows.map((row) => row.id);
    const [heldElsewhere, movedLater, cancelled, runs] = ids;
    await pool.query(`UPDATE delayed_task SET cancelled_at = now() WHERE id = $1`, [cancelled]);
    const locker = await pool.connect();
    const claimer = await pool.connect();
    try {
      await locker.query('BEGIN');
      // Held by a transaction that cancels it, not committed yet: read as it was.
      await locker.query(`UPDATE delayed_task SET cancelled_at = now() WHERE id = $1`, [
        heldElsewhere,
      ]);
      const now = new Date();
      const note = await recordAttempt(sqlOf(claimer), 'verdicts', ids, now);
      await claimer.query('BEGIN');
      const result = await claimTasks(sqlOf(claimer), ids, now, note, false);
      await claimer.query('COMMIT');
      await locker.query('ROLLBACK');
      expect(result.claimed.map((row) => row.id)).toEqual([runs]);
      const passed = [...result.passed].sort((a, b) => a.dueAtMs - b.dueAtMs);
      expect(passed.map((row) => [row.id, row.lockedBy])).toEqual([
        [heldElsewhere, 'here'],
        [movedLater, 'here'],
      ]);
      expect(passed[1].dueAtMs).toBeGreaterThan(now.getTime());
      // The cancelled one is no longer pending: nothing to follow, not listed.
      expect(result.passed.map((row) => row.id)).not.toContain(cancelled);
    } finally {
      locker.release();
      claimer.release();
    }
  });

  // A plan, not a timing: joined to the claim's due rows instead, a generic
  // plan that guessed one due row repeated the notes' index scan for each of
  // them (loops = the claim's size, 5,000 buffers a claim of 50).
  it('are read once by a claim of many, even in a generic plan on tables never analyzed', async () => {
    await pool.query(`ALTER TABLE delayed_task SET (autovacuum_enabled = false)`);
    await pool.query(`ALTER TABLE delay_attempt SET (autovacuum_enabled = false)`);
    const ids = (
      await pool.query<{ id: string }>(
        `INSERT INTO delayed_task (type, due_at, max_attempts, created_at, updated_at)
         SELECT 'plan', now() - interval '1 s', 1, now(), now() FROM generate_series(1, 50)
         RETURNING id`,
      )
    ).rows.map((row) => row.id);
    const client = await pool.connect();
    const plans: PlanNode[] = [];
    try {
      const note = await recordAttempt(sqlOf(client), 'plan', ids, new Date());
      await client.query('BEGIN');
      await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
      const literal = (value: unknown) =>
        value === null
          ? 'NULL'
          : client.escapeLiteral(
              Array.isArray(value)
                ? `{${value.join(',')}}`
                : value instanceof Date
                  ? value.toISOString()
                  : String(value),
            );
      const explaining: Sql = {
        rows: async <T>(text: string, params: unknown[]) => {
          await client.query(`PREPARE plan_probe AS ${text}`);
          const [row] = (
            await client.query(
              `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE plan_probe(${params.map(literal).join(', ')})`,
            )
          ).rows;
          await client.query('DEALLOCATE plan_probe');
          plans.push(planRoot(row));
          return [] as T[];
        },
      };
      await claimTasks(explaining, ids, new Date(), note, false);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    const scans = nodesOf(plans[0]).filter(
      (node) => node['Index Name'] === 'delay_attempt_task_ids_idx',
    );
    expect(scans.length).toBeGreaterThan(0);
    for (const scan of scans) expect(scan['Actual Loops']).toBeLessThanOrEqual(1);
  });

  it('of a session that is gone are charged, once, by the next claim', async () => {
    const [{ id }] = (
      await pool.query(
        `INSERT INTO delayed_task (type, due_at, max_attempts, created_at, updated_at)
         VALUES ('x', now() - interval '1 s', 3, now(), now()) RETURNING id`,
      )
    ).rows;
    const now = new Date();
    const dying = new pg.Client({ connectionString: db.url });
    await dying.connect();
    await recordAttempt(
      { rows: async <T>(t: string, p: unknown[]) => (await dying.query(t, p)).rows as T[] },
      'dead',
      [id],
      now,
    );
    await dying.end(); // its process died: the note's lock goes with the session
    const next = await pool.connect();
    try {
      // A batch only defers it (uncharged): the claim of its own charges it.
      const note = await recordAttempt(sqlOf(next), 'next', [id], now);
      await next.query('BEGIN');
      expect(await claimTasks(sqlOf(next), [id], now, note, false)).toEqual({
        claimed: [],
        alone: [id],
        gated: [],
        passed: [],
        unhandled: [],
      });
      await next.query('COMMIT');
      const solo = await recordAttempt(sqlOf(next), 'next', [id], now);
      await next.query('BEGIN');
      const counted = await takeOrphanedNotes(sqlOf(next), [id], solo);
      expect(counted).toMatchObject([{ row: { id, attempts: 0 }, times: 1, instanceId: 'dead' }]);
      await next.query('COMMIT');
      // Taken out of the orphaned note: another instance's claim finds nothing more to charge
      // (the solo note is alive: its session still holds its lock).
      const other = await pool.connect();
      try {
        const again = await recordAttempt(sqlOf(other), 'other', [id], now);
        await other.query('BEGIN');
        expect(await takeOrphanedNotes(sqlOf(other), [id], again)).toEqual([]);
        await other.query('ROLLBACK');
      } finally {
        other.release();
      }
    } finally {
      next.release();
    }
  });
});

describeWithServer('a batch rerun with savepoints after a failure in its optimistic pass', () => {
  const app = useDelayTestApp({ concurrency: 1, retry: { baseDelay: '10s', jitter: 0 } });

  // The optimistic pass rolls back and the batch runs again with savepoints.
  // Between the two passes the claim's note must stay locked: an advisory
  // unlock is not undone by ROLLBACK, and a note that looks dead then would
  // be charged against a healthy batch-mate by another instance's claim.
  it("keeps its note locked between the passes: another instance's claim charges its batch-mate nothing", async () => {
    const { t } = app;
    const [healthy, failing] = await t.delay.scheduleMany([
      { type: 'test.effect', delay: 0 },
      { type: 'test.effect', delay: 0, payload: { fail: 1 } },
    ]);
    const other = new pg.Client({
      connectionString: (t.dataSource.options as { url: string }).url,
    });
    await other.connect();
    const otherSql: Sql = {
      rows: async <T>(text: string, params: unknown[]) =>
        (await other.query(text, params)).rows as T[],
    };
    const { pid } = (await other.query('SELECT pg_backend_pid() AS pid')).rows[0];
    let otherClaim: Promise<boolean> | undefined;
    t.behaviour.afterEffect = async (_payload, context) => {
      if (context.task.id !== failing.id || otherClaim) return;
      // Another instance's claim of the healthy task, as a claim of its own
      // would run it: it waits for the row, which this pass holds, and gets
      // it the moment this pass rolls back, before the rerun can take it again.
      const [note] = await t.query<{ id: string }>(
        `SELECT id FROM delay_attempt WHERE $1 = ANY(task_ids)`,
        [healthy.id],
      );
      otherClaim = (async () => {
        await other.query('BEGIN');
        // One statement: it waits for the row, then at once (no round trip
        // for the rerun to win) tries the note's lock as a charge would.
        const [looked] = (
          await other.query(
            `WITH waited AS MATERIALIZED (SELECT id FROM delayed_task WHERE id = $1 FOR UPDATE)
             SELECT (SELECT count(*) FROM waited) AS waited,
                    pg_try_advisory_xact_lock(${ATTEMPT_LOCK_CLASS}, ${attemptLockKey('$2::bigint')}) AS dead`,
            [healthy.id, note.id],
          )
        ).rows;
        const counts = looked.dead ? await takeOrphanedNotes(otherSql, [healthy.id], '0') : [];
        const policy = new WindowPolicy({ windowMs: 3_600_000, instanceId: 'other', leaseMs: 30_000 });
        for (const { row, times } of counts) {
          const change = charge(row, times, 'cut off', row.due_at.getTime(), Date.now(), policy);
          await writeCharge(otherSql, change, new Date(), null);
        }
        await other.query('COMMIT');
        return looked.dead as boolean;
      })();
      for (let waited = 0; waited < 200; waited++) {
        const [row] = await t.query(`SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1`, [
          pid,
        ]);
        if (row?.wait_event_type === 'Lock') break;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    };
    try {
      const report = await t.tester.runDue();
      // The note was alive throughout: its lock was never free to take.
      expect(await otherClaim).toBe(false);
      expect(report.byType['test.effect']).toMatchObject({ executed: 1, failed: 1 });
      expect(await t.effects(healthy.id)).toBe(1);
      expect(await t.delay.get({ id: healthy.id })).toMatchObject({
        state: 'executed',
        attempts: 1,
        lastError: null,
      });
      expect(await t.delay.get({ id: failing.id })).toMatchObject({
        state: 'pending',
        attempts: 1,
      });
    } finally {
      t.behaviour.afterEffect = undefined;
      await other.end();
    }
  });
});

@Injectable()
class SwallowingHandlers {
  /** Hits a unique violation, swallows it, and asks for a discard: the transaction is aborted. */
  @DelayedTaskHandler('test.swallow-then-discard')
  async swallowThenDiscard(_payload: unknown, context: TaskContext) {
    await context.manager.query('SELECT * FROM no_such_table').catch(() => undefined);
    return TaskOutcome.discard('duplicate');
  }

  @DelayedTaskHandler('test.fine')
  async fine(_payload: unknown, context: TaskContext) {
    await recordEffect(context.manager, context);
  }
}

@Module({ providers: [SwallowingHandlers] })
class SwallowingModule {}

describe('a handler that swallows a database error, then returns an outcome', () => {
  const app = useDelayTestApp(
    { concurrency: 1, retry: { baseDelay: '10s', jitter: 0 } },
    { modules: [{ module: SwallowingModule }] },
  );
  let t: DelayTestApp;

  beforeAll(async () => {
    t = app.t;
  });

  it('fails that attempt alone; its batch-mates commit', async () => {
    const bad = await t.delay.schedule({ type: 'test.swallow-then-discard', delay: 0 });
    const good = await t.delay.schedule({ type: 'test.fine', delay: 0 });
    const report = await t.tester.runDue();
    expect(report.byType['test.fine']).toMatchObject({ executed: 1 });
    expect(report.byType['test.swallow-then-discard']).toMatchObject({ failed: 1 });
    expect(await t.effects(good.id)).toBe(1);
    const failed = await t.delay.get({ id: bad.id });
    expect(failed).toMatchObject({ state: 'pending', attempts: 1 });
    expect(failed!.lastError).toMatch(/left its transaction aborted/);
  });
});

describe('an instance id that needs quoting', () => {
  // The note is sent with the claim's BEGIN as one script, its values quoted in.
  const instanceId = `o'brien \\ "1"; DROP TABLE delayed_task; --`;
  const app = useDelayTestApp({ instanceId });

  it('notes and claims as any other: the task runs once under that id', async () => {
    const { t } = app;
    const task = await t.delay.schedule({ type: 'test.effect', delay: '1s' });
    const report = await t.tester.advance('1s');
    expect(report.executed).toBe(1);
    expect(await t.effects(task.id)).toBe(1);
    expect(await t.delay.get({ id: task.id })).toMatchObject({ state: 'executed' });
    // The lease row holds the exact id, and the table the script could have dropped is there.
    const rows = await t.query<{ id: string }>(`SELECT id FROM delay_instance WHERE id = $1`, [
      instanceId,
    ]);
    expect(rows).toEqual([{ id: instanceId }]);
  });
});

describe('the notes table', () => {
  const app = useDelayTestApp();

  it('is unlogged (emptied by crash recovery, as its notes die with the server), its id sequence logged', async () => {
    const rows = await app.t.query<{ relname: string; relpersistence: string }>(
      `SELECT relname, relpersistence FROM pg_class
       WHERE relname IN ('delay_attempt', 'delay_attempt_pkey', 'delay_attempt_task_ids_idx')
          OR oid = pg_get_serial_sequence('delay_attempt', 'id')::regclass
       ORDER BY relname`,
    );
    expect(rows).toEqual([
      { relname: 'delay_attempt', relpersistence: 'u' },
      { relname: 'delay_attempt_id_seq', relpersistence: 'p' },
      { relname: 'delay_attempt_pkey', relpersistence: 'u' },
      { relname: 'delay_attempt_task_ids_idx', relpersistence: 'u' },
    ]);
  });
});
