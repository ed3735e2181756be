import type { Database, Sql } from '../store/sql.js';
import { removeLocked, type ScheduleSpec } from './schedule-statements.js';

/**
 * Schedule `s` (an alias) is declared by no live instance but `self` (the
 * instance asking, live as it asks). An instance is live while its lease row
 * is in `delay_instance`: the row leaves at a clean stop, or when another
 * instance takes over after its lease expired (with the lease's guard
 * against clock jumps, see InstanceLease.expiryCutoff); reading
 * `lease_until` against this instance's clock instead would count every
 * other instance dead after a jump of the clock.
 */
export const UNDECLARED = (s: string, self: string) => `NOT EXISTS (
       SELECT 1 FROM delay_schedule_declaration d
       WHERE d.name = ${s}.name
         AND (d.instance_id = ${self} OR EXISTS (SELECT 1 FROM delay_instance i WHERE i.id = d.instance_id)))`;

/** What a declaration records of a spec: everything that defines the schedule. */
export function ruleOf(spec: ScheduleSpec): string {
  const { name: _name, payloadJson, ...rule } = spec;
  return JSON.stringify({ ...rule, payload: JSON.parse(payloadJson) as unknown });
}

/**
 * Records what instance `instanceId` declares in code, replacing what an
 * earlier process under the same id declared. Called at boot, after the
 * instance took its lease.
 */
export async function declareSchedules(
  sql: Sql,
  instanceId: string,
  specs: ScheduleSpec[],
  now: Date,
): Promise<void> {
  const names = specs.map((spec) => spec.name);
  await sql.rows(
    `DELETE FROM delay_schedule_declaration WHERE instance_id = $1 AND NOT (name = ANY($2::text[]))`,
    [instanceId, names],
  );
  if (specs.length === 0) return;
  await sql.rows(
    `INSERT INTO delay_schedule_declaration (name, instance_id, rule, declared_at)
     SELECT d.name, $1, d.rule, $4 FROM unnest($2::text[], $3::jsonb[]) AS d(name, rule)
     ON CONFLICT (name, instance_id) DO UPDATE SET rule = EXCLUDED.rule, declared_at = EXCLUDED.declared_at`,
    [instanceId, names, specs.map(ruleOf), now],
  );
}

/**
 * Other live instances that declare one of `instanceId`'s schedules with a
 * different rule: the newest boot's rule is the one written, and the boot
 * warns about each of these.
 */
export function conflictingDeclarations(sql: Sql, instanceId: string) {
  return sql.rows<{ name: string; instance_id: string }>(
    `SELECT other.name, other.instance_id
     FROM delay_schedule_declaration mine
     JOIN delay_schedule_declaration other ON other.name = mine.name AND other.instance_id <> mine.instance_id
     JOIN delay_instance i ON i.id = other.instance_id
     WHERE mine.instance_id = $1 AND other.rule <> mine.rule
     ORDER BY other.name, other.instance_id`,
    [instanceId],
  );
}

/**
 * Removes the schedules declared in code that no live instance declares
 * (their last declaring instance stopped, or its lease expired), each under
 * its row lock (SKIP LOCKED: one a planner holds is checked next round), with
 * their occurrences planned ahead; and forgets the declarations of instances
 * gone (their lease row deleted at a stop or a takeover). A schedule one
 * instance does not know is never removed because of it. Returns the names
 * removed.
 */
export function removeUndeclared(db: Database, self: string, now: Date): Promise<string[]> {
  return db.transaction(async (sql) => {
    const locked = await sql.rows<{ name: string }>(
      `SELECT s.name FROM delay_schedule s
       WHERE s.in_code AND ${UNDECLARED('s', '$1')}
       ORDER BY s.name
       FOR UPDATE SKIP LOCKED`,
      [self],
    );
    await sql.rows(
      `DELETE FROM delay_schedule_declaration d
       WHERE d.instance_id <> $1 AND NOT EXISTS (SELECT 1 FROM delay_instance i WHERE i.id = d.instance_id)`,
      [self],
    );
    return removeLocked(
      sql,
      locked.map((row) => row.name),
      now,
    );
  });
}
