import type { Database, Sql } from '../store/sql.js';
import { removeLocked, type ScheduleSpec } from './schedule-statements.js';

/**
 * Schedule `s` is declared by no live instance but `self`. Live means its
 * row is in `delay_instance` (deleted at a stop or a takeover, which guards
 * against clock jumps): reading `lease_until` against this clock instead
 * would count every other instance expired after a jump.
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

/** At boot, after the lease: records what this instance declares in code, replacing an earlier process's under the same id. */
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

/** Other live instances declaring one of `instanceId`'s schedules with another rule (the newest boot's rule is written). */
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
 * Removes the schedules declared in code that no live instance declares, with
 * their occurrences planned ahead, each under its row lock (SKIP LOCKED: one a
 * planner holds waits for the next round), and deletes the declarations of
 * instances gone. Returns the names removed.
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
