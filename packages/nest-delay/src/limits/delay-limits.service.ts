import { Injectable } from '@nestjs/common';
import { checkText, DelayValidationError, UnknownTaskTypeError } from '../errors/delay-errors.js';
import { HandlerRegistry } from '../handler-registry.js';
import { DelayRuntime } from '../runtime/delay.runtime.js';
import { PAUSE_LOCK_CLASS, PAUSE_WAIT_CLASS, readTypeLimits } from './limit-statements.js';
import type { Sql } from '../store/sql.js';
import { pendingIn } from '../tasks/task-row.js';
import { LimitBook } from './gate-lines.js';
import { isLimited, resolveLimit, type LimitChange, type ResolvedLimit } from '../task-limit.js';

/** `waiting` counts stop here: a backlog this large reads as "at least". */
export const WAITING_COUNT_CAP = 100_000;

/** One task type's limits, as DelayLimits lists them. */
export interface TypeLimitInfo {
  type: string;
  /** Paused cluster-wide: none of its tasks starts until resumed. */
  paused: boolean;
  pausedAt: Date | null;
  /**
   * What its handlers declare, as the last instance to boot stored it
   * (every instance applies that one), else this instance's code (null: no
   * limit declared).
   */
  declared: ResolvedLimit | null;
  /** The instance whose declaration is stored, and when it booted (null: none stored yet). */
  declaredBy: { instanceId: string; at: Date } | null;
  /** What was set at run time in its place (null: none). */
  override: ResolvedLimit | null;
  /** In force (null: unlimited). */
  effective: ResolvedLimit | null;
  /** Limits apply to each key of the payload (its handler's `limit.key`), not to the type as a whole. */
  perKey: boolean;
  /**
   * Its pending tasks already due, on every instance: waiting for the limit
   * or the pause, or about to run. Counted up to WAITING_COUNT_CAP.
   */
  waiting: number;
  /** Of those, held in this instance's gate. */
  waitingHere: number;
}

/**
 * Shared limits at run time: pause and resume a type, set limits in place
 * of the declared ones, or reset. Each change is one statement on
 * `delay_type_limit`, which every claim reads: it holds on every instance
 * from its next claim. Pausing moves no task: each runs on resume, once.
 */
@Injectable()
export class DelayLimits {
  constructor(
    private readonly runtime: DelayRuntime,
    private readonly handlers: HandlerRegistry,
  ) {}

  /** No task of `type` starts, on any instance, until `resume`. Tasks running finish. */
  async pause(type: string): Promise<TypeLimitInfo> {
    await this.known(type);
    const now = new Date(this.now());
    await setPaused(this.db, type, true, now);
    this.gate.changed(type, { type, paused_at: now });
    return this.get(type);
  }

  async resume(type: string): Promise<TypeLimitInfo> {
    await this.known(type);
    await setPaused(this.db, type, false, new Date(this.now()));
    this.gate.changed(type, { type, paused_at: null });
    return this.get(type);
  }

  /**
   * Sets limits for `type` in place of its declared ones, on every instance:
   * fields given replace those in force (null removes that limit), others
   * stay. A key function can only be declared in code.
   */
  async set(type: string, change: LimitChange): Promise<TypeLimitInfo> {
    await this.known(type);
    if (change === null || typeof change !== 'object' || Array.isArray(change))
      throw new DelayValidationError('limit', 'must be an object like { concurrency, rate }');
    if (change.concurrency === undefined && change.rate === undefined)
      throw new DelayValidationError(
        'limit',
        'must set concurrency or rate (null removes one); to go back to the declared limits, reset',
      );
    const current = (await this.get(type)).effective ?? { concurrency: null, rate: null };
    let limit: ResolvedLimit;
    try {
      limit = resolveLimit(change, current, 'limit');
    } catch (error) {
      // resolveLimit's message begins with the field it names.
      const message = (error as Error).message;
      const field = message.split(' ')[0];
      throw new DelayValidationError(field, message.slice(field.length + 1));
    }
    await writeOverride(this.db, type, limit, new Date(this.now()));
    this.gate.changed(type, {
      type,
      overridden: true,
      concurrency: limit.concurrency,
      rate_starts: limit.rate?.starts ?? null,
      rate_per_ms: limit.rate ? String(limit.rate.perMs) : null,
    });
    return this.get(type);
  }

  /** Back to the limits its handler declares. A pause stays. */
  async reset(type: string): Promise<TypeLimitInfo> {
    await this.known(type);
    await writeOverride(this.db, type, null, new Date(this.now()));
    this.gate.changed(type, { type, overridden: false });
    return this.get(type);
  }

  /** Every type with a handler here or anything set at run time, by name. */
  list(): Promise<TypeLimitInfo[]> {
    return this.read(null);
  }

  async get(type: string): Promise<TypeLimitInfo> {
    const [found] = await this.read(type);
    if (!found) throw new UnknownTaskTypeError(type, this.handlers.types());
    return found;
  }

  /** Every type, or only `only`: its waiting tasks are counted alone. */
  private async read(only: string | null): Promise<TypeLimitInfo[]> {
    const rows = await readTypeLimits(this.db);
    const book = new LimitBook((type) => this.handlers.limitOf(type)?.limit);
    book.replace(rows);
    const types = [...new Set([...this.handlers.types(), ...rows.map((row) => row.type)])]
      .filter((type) => only === null || type === only)
      .sort();
    const waiting = await countWaiting(this.db, types, new Date(this.now()), WAITING_COUNT_CAP);
    const here = this.gate.waitingByType();
    const stored = new Map(rows.map((row) => [row.type, row]));
    return types.map((type) => {
      const limits = book.of(type);
      const row = stored.get(type);
      const declaredBy =
        row?.declared_at && row.declared_by
          ? { instanceId: row.declared_by, at: row.declared_at }
          : null;
      return {
        type,
        paused: limits.pausedAt !== null,
        pausedAt: limits.pausedAt,
        declared: isLimited(limits.declared) ? limits.declared : null,
        declaredBy,
        override: limits.override,
        effective: isLimited(limits.effective) ? limits.effective : null,
        perKey: declaredBy ? row!.declared_per_key : this.handlers.limitOf(type)?.key !== undefined,
        waiting: waiting.get(type) ?? 0,
        waitingHere: here.get(type) ?? 0,
      };
    });
  }

  /** A type with a handler here, or one already set at run time, or any type when allowUnknownTypes. */
  private async known(type: string): Promise<void> {
    checkText(type, 'type', 200);
    if (this.handlers.has(type) || this.runtime.ctx.options.allowUnknownTypes) return;
    const rows = await readTypeLimits(this.db);
    if (!rows.some((row) => row.type === type))
      throw new UnknownTaskTypeError(type, this.handlers.types());
  }

  private get gate() {
    return this.runtime.dispatcher.gate;
  }

  private now(): number {
    return this.runtime.ctx.clock.now();
  }

  private get db() {
    return this.runtime.ctx.db.pool;
  }
}

// ---------------------------------------------------------------- the statements of run-time changes and counts

/**
 * Pauses a type (`paused` true) or resumes it; a pause keeps the time it
 * began. A pause takes the type's pause lock exclusively first (the
 * protocol is in limit-statements.ts): it commits, and returns, once the
 * gate's claims of the type have ended.
 */
async function setPaused(sql: Sql, type: string, paused: boolean, now: Date): Promise<void> {
  await sql.rows(
    `WITH waiting AS (
       SELECT CASE WHEN $2::boolean THEN pg_advisory_xact_lock(${PAUSE_WAIT_CLASS}, hashtext($1)) END
     ), pause_lock AS (
       SELECT CASE WHEN $2::boolean THEN pg_advisory_xact_lock(${PAUSE_LOCK_CLASS}, hashtext($1)) END
       FROM waiting
     )
     INSERT INTO delay_type_limit (type, paused_at, updated_at)
     SELECT $1, CASE WHEN $2::boolean THEN $3::timestamptz END, $3 FROM pause_lock
     ON CONFLICT (type) DO UPDATE
       SET paused_at = CASE WHEN $2::boolean THEN COALESCE(delay_type_limit.paused_at, $3) END,
           updated_at = $3`,
    [type, paused, now],
  );
}

/** Replaces the declared limits of a type with `limit` (null: back to the declared). */
async function writeOverride(
  sql: Sql,
  type: string,
  limit: ResolvedLimit | null,
  now: Date,
): Promise<void> {
  await sql.rows(
    `INSERT INTO delay_type_limit (type, overridden, concurrency, rate_starts, rate_per_ms, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (type) DO UPDATE
       SET overridden = EXCLUDED.overridden, concurrency = EXCLUDED.concurrency,
           rate_starts = EXCLUDED.rate_starts, rate_per_ms = EXCLUDED.rate_per_ms,
           updated_at = EXCLUDED.updated_at`,
    [
      type,
      limit !== null,
      limit?.concurrency ?? null,
      limit?.rate?.starts ?? null,
      limit?.rate?.perMs ?? null,
      now,
    ],
  );
}

/**
 * Pending tasks of these types due by `now`, by type, each counted up to
 * `cap` (a backlog of millions is "at least cap", not a million-row count
 * on every read): what waits behind their limits or pauses, cluster-wide.
 */
async function countWaiting(
  sql: Sql,
  types: string[],
  now: Date,
  cap: number,
): Promise<Map<string, number>> {
  if (types.length === 0) return new Map();
  const rows = await sql.rows<{ type: string; waiting: string }>(
    `SELECT types.type, (
       SELECT count(*) FROM (
         SELECT 1 FROM delayed_task t
         WHERE t.type = types.type AND ${pendingIn('t')} AND t.due_at <= $2
         LIMIT $3
       ) capped
     ) AS waiting
     FROM unnest($1::text[]) AS types(type)`,
    [types, now, cap],
  );
  return new Map(rows.map((row) => [row.type, Number(row.waiting)]));
}
