import { errorText } from '../delay.messages.js';
import type { DelayContext } from '../context/delay-context.js';
import type { GateClaim, GateItem, GateOutcome, LimitGate } from './limit-gate.js';
import type { LineRefusal } from './gate-line.types.js';
import type { TaskId } from '../task.types.js';
import { STAMP_TRIES } from '../context/tuning.js';
import type { Sql } from '../store/sql.js';
import { declaredColumn } from './limit-statements.js';
import type { ResolvedLimit } from '../task-limit.js';

/** A gate's claim: its line, and what to do once each handler started. */
export interface LineClaim {
  gated: GateClaim;
  /** The rate credits taken for its starts, one a task (undefined: none taken, no rate known here). */
  credits?: number[];
  onStart?: () => void;
}

/** What a gate's claim came to, as the gate needs it. */
export interface LineClaimEnd {
  claimedIds: Set<TaskId>;
  /** Not tried: a refusal, or the claim's time ran out. */
  left: TaskId[];
  /** Their last attempt was cut off: each runs alone. */
  alone: TaskId[];
  refused: LineRefusal | null;
}

/** The claim side, as a gate's claim uses it (ClaimRunner): limits sit below claims and name only this. */
export interface LineClaimRunner {
  /** The time limits are kept in: the database's (null) unless the module runs on a clock of a test's. */
  limitNowMs(): number | null;
  run(
    ids: TaskId[],
    alone: boolean,
    line: LineClaim,
  ): Promise<LineClaimEnd | 'cut-off' | undefined>;
  holdAll(ids: TaskId[], dueAtMs: number, type?: string): void;
  retrySoonMs(): number;
}

/**
 * A gate's claim of one line's tasks: rate credits first, in a statement of
 * their own (none free: the line waits), then the claim (ClaimRunner: line
 * check, one claim statement, handlers one at a time under savepoints). A
 * credit is stamped once its start happened; those unused are put back.
 */
export class GateClaims {
  /** Credits whose starts happened, to stamp: one statement in flight takes all queued. */
  private queued: StartedCredit[] = [];
  private flushing: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly ctx: DelayContext,
    private readonly gate: LimitGate,
    private readonly runner: LineClaimRunner,
  ) {}

  /** A credit's stamp is queued or under way. */
  get stamping(): boolean {
    return this.flushing !== undefined;
  }

  /** Credits this instance left in flight under the same id before a restart. */
  async start(): Promise<void> {
    await reapCredits(this.ctx.db.pool, [this.ctx.options.instanceId]);
  }

  /** Waits for the stamps queued and under way (each batch tried once more at most). */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.flushing;
  }

  async run(gated: GateClaim): Promise<void> {
    const { ctx, runner } = this;
    const { line } = gated;
    const holder = ctx.options.instanceId;
    let outcome: GateOutcome = { kind: 'done' };
    let back: GateItem[] = [];
    let credits: TakenCredit[] | undefined;
    let used = 0;
    let items = gated.items;
    try {
      if (gated.effective.rate) {
        const answer = await takeCredits(
          ctx.db.pool,
          line.type,
          line.key,
          gated.declared.rate,
          holder,
          runner.limitNowMs(),
          items.length,
        );
        this.gate.creditTaken(gated);
        if (!answer.unlimited) {
          credits = answer.taken;
          if (credits.length < items.length) {
            // The rest wait for the next credit to free.
            back = items.slice(credits.length);
            items = items.slice(0, credits.length);
            outcome = { kind: 'rate', nextFreeMs: answer.nextFreeMs };
          }
          if (items.length === 0) return;
        }
      }
      const taken = credits;
      const ended = await runner.run(
        items.map((item) => item.id),
        items[0].alone,
        {
          gated: { ...gated, items },
          // The claim checks they are all still this instance's.
          credits: taken?.map((credit) => credit.credit),
          onStart: () => {
            const credit = taken?.[used++];
            if (!credit) return;
            this.queued.push({ type: line.type, key: line.key, credit: credit.credit });
            this.flushing ??= this.flush();
          },
        },
      );
      if (ended === 'cut-off') {
        if (outcome.kind !== 'rate') outcome = { kind: 'ran' };
      } else if (ended) {
        const left = new Set(ended.left);
        const alone = new Set(ended.alone);
        // Not tried (a refusal, or its time ran out): back to the line as they were.
        back.push(...items.filter((item) => left.has(item.id)));
        // Cut off last time: again, alone.
        back.push(
          ...items
            .filter((item) => alone.has(item.id))
            .map((item) => ({ ...item, alone: true })),
        );
        if (ended.refused === 'unpaced') outcome = { kind: 'stale' };
        else if (ended.refused) outcome = { kind: ended.refused };
        else if (outcome.kind !== 'rate' && ended.claimedIds.size > 0) outcome = { kind: 'ran' };
      }
    } catch (error) {
      ctx.logger.error(`Taking rate credits for ${line.type} failed: ${errorText(error)}`);
      // All of them, those set aside for want of a credit too: nothing may
      // leave the gate for nowhere (a task that ran meanwhile is let go by its claim).
      runner.holdAll(
        gated.items.map((item) => item.id),
        runner.retrySoonMs(),
        line.type,
      );
      back = [];
    } finally {
      let returned = false;
      for (const credit of credits?.slice(used) ?? [])
        await returnCredit(ctx.db.pool, line.type, line.key, credit, holder).then(
          () => (returned = true),
          (error: unknown) =>
            ctx.logger.error(
              `Putting back an unused rate credit of ${line.type} failed (it frees when this instance restarts or is taken over): ${errorText(error)}`,
            ),
        );
      this.gate.ended(gated, outcome, back);
      if (returned) this.gate.creditSettled(line.type, line.key, true);
    }
  }

  private async flush(): Promise<void> {
    try {
      while (this.queued.length > 0) await this.stamp(this.queued.splice(0));
    } finally {
      this.flushing = undefined;
    }
  }

  /** A batch that fails is tried again a few times; then its credits stay in flight (the safe side) until reapCredits. */
  private async stamp(batch: StartedCredit[]): Promise<void> {
    const { ctx } = this;
    for (let tries = 1; ; tries++) {
      try {
        await stampCredits(ctx.db.pool, batch, ctx.options.instanceId, this.runner.limitNowMs());
        break;
      } catch (error) {
        if (tries >= STAMP_TRIES || (this.stopped && tries >= 2)) {
          ctx.logger.error(
            `Stamping ${batch.length} rate credit(s) of ${batch[0].type} failed; they stay in use until this instance restarts or is taken over: ${errorText(error)}`,
          );
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 200 * tries));
      }
    }
    const lines = new Map(batch.map((c) => [`${c.type}\u001f${c.key}`, c]));
    for (const { type, key } of lines.values()) this.gate.creditSettled(type, key, false);
  }
}

// ---------------------------------------------------------------- the rate credits' statements

/* The ledger `delay_limit_credit` (the protocol is in limit-statements.ts, "Rate"): take, stamp, put back, reap and prune. */

/**
 * A credit's statements commit without waiting for the WAL flush (their
 * cost was one fsync each per start). Safe: the claim that follows a take
 * commits durably, which flushes the take before it; a stamp lost in a
 * server crash leaves its credit in flight, which is the safe side, until
 * its holder is taken over or restarts.
 */
const ASYNC_COMMIT = `async AS (SELECT set_config('synchronous_commit', 'off', true))`;

/** A credit taken for one start, and what to put back if the start does not happen. */
export interface TakenCredit {
  credit: number;
  previous: Date;
}

/** The outcome of asking for credits. */
export type CreditAnswer =
  /** Some taken (up to the number asked); with fewer, the earliest the next frees (null: unknown). */
  | { taken: TakenCredit[]; nextFreeMs: number | null; unlimited?: undefined }
  /** The type has no rate limit any more (changed at run time). */
  | { taken: []; nextFreeMs: null; unlimited: true };

/**
 * Takes up to `count` credits of `type`/`key` in flight for `holder`,
 * committed before the claim; credits are made on first use. `nowMs`: a
 * test clock's time; null, the database's.
 */
export async function takeCredits(
  sql: Sql,
  type: string,
  key: string,
  declared: ResolvedLimit['rate'],
  holder: string,
  nowMs: number | null,
  count: number,
): Promise<CreditAnswer> {
  for (let made = false; ; made = true) {
    const rows = await sql.rows<{
      starts: number | null;
      credit: number | null;
      previous_ms: number | null;
      existing: string;
      next_free_ms: number | null;
    }>(
      `WITH ${ASYNC_COMMIT}, rate AS (
         SELECT CASE WHEN l.overridden THEN l.rate_starts
                     ELSE ${declaredColumn('l', 'rate_starts', '$3::int')} END AS starts,
                CASE WHEN l.overridden THEN l.rate_per_ms
                     ELSE ${declaredColumn('l', 'rate_per_ms', '$4::bigint')} END AS per_ms,
                COALESCE(to_timestamp($6::float8 / 1000), clock_timestamp()) AS now
         FROM async LEFT JOIN delay_type_limit l ON l.type = $1
       ), free AS (
         SELECT c.credit, c.used_at FROM delay_limit_credit c, rate
         WHERE c.type = $1 AND c.key = $2 AND c.credit < rate.starts
           AND c.used_at <= rate.now - rate.per_ms * interval '1 millisecond'
         ORDER BY c.used_at LIMIT $7
         FOR UPDATE OF c SKIP LOCKED
       ), taken AS (
         UPDATE delay_limit_credit c SET used_at = 'infinity', holder = $5
         FROM free WHERE c.type = $1 AND c.key = $2 AND c.credit = free.credit
         RETURNING c.credit, free.used_at AS previous
       ), ledger AS (
         -- Once, not once per credit taken: read after the take's snapshot, the
         -- credits just taken still show their old stamps, so they are left out.
         SELECT count(c.credit) AS existing,
                (extract(epoch FROM min(c.used_at) FILTER (
                   WHERE c.used_at <> 'infinity' AND c.credit NOT IN (SELECT credit FROM taken)
                 )) * 1000)::float8 + min(rate.per_ms) AS next_free_ms
         FROM rate LEFT JOIN delay_limit_credit c
           ON c.type = $1 AND c.key = $2 AND c.credit < rate.starts
       )
       SELECT rate.starts, taken.credit,
              (extract(epoch FROM taken.previous) * 1000)::float8 AS previous_ms,
              ledger.existing, ledger.next_free_ms
       FROM rate CROSS JOIN ledger LEFT JOIN taken ON true`,
      [type, key, declared?.starts ?? null, declared?.perMs ?? null, holder, nowMs, count],
    );
    const first = rows[0];
    if (first.starts === null) return { taken: [], nextFreeMs: null, unlimited: true };
    const taken = rows
      .filter((row) => row.credit !== null)
      .map((row) => ({
        credit: row.credit!,
        // -infinity (a new credit) comes back as -Infinity: any time will do.
        previous: new Date(Number.isFinite(row.previous_ms) ? row.previous_ms! : 0),
      }));
    if (taken.length === 0 && Number(first.existing) < first.starts && !made) {
      await sql.rows(
        `INSERT INTO delay_limit_credit (type, key, credit, used_at)
         SELECT $1, $2, n, '-infinity' FROM generate_series(0, $3::int - 1) n
         ON CONFLICT DO NOTHING`,
        [type, key, first.starts],
      );
      continue;
    }
    return { taken, nextFreeMs: first.next_free_ms };
  }
}

/** A credit whose start has happened, to stamp. */
export interface StartedCredit {
  type: string;
  key: string;
  credit: number;
}

/** Stamps credits whose starts happened, on the database's clock (null `nowMs`): after each start. */
export async function stampCredits(
  sql: Sql,
  credits: StartedCredit[],
  holder: string,
  nowMs: number | null,
): Promise<void> {
  await sql.rows(
    `WITH ${ASYNC_COMMIT}
     UPDATE delay_limit_credit c
     SET used_at = COALESCE(to_timestamp($5::float8 / 1000), clock_timestamp()), holder = NULL
     FROM async, unnest($1::text[], $2::text[], $3::int[]) AS s(type, key, credit)
     WHERE c.type = s.type AND c.key = s.key AND c.credit = s.credit
       AND c.holder = $4 AND c.used_at = 'infinity'`,
    [
      credits.map((c) => c.type),
      credits.map((c) => c.key),
      credits.map((c) => c.credit),
      holder,
      nowMs,
    ],
  );
}

/** Puts a credit back as it was: its start did not happen. */
export async function returnCredit(
  sql: Sql,
  type: string,
  key: string,
  taken: TakenCredit,
  holder: string,
): Promise<void> {
  await sql.rows(
    `WITH ${ASYNC_COMMIT}
     UPDATE delay_limit_credit SET used_at = $4, holder = NULL
     FROM async WHERE type = $1 AND key = $2 AND credit = $3 AND holder = $5 AND used_at = 'infinity'`,
    [
      type,
      key,
      taken.credit,
      taken.previous.getTime() === 0 ? '-infinity' : taken.previous,
      holder,
    ],
  );
}

/**
 * Stamps the credits that `holders` (instances taken over, or this one
 * restarting under its old id) left in flight: whatever they started, they
 * started before now.
 */
export async function reapCredits(sql: Sql, holders: string[]): Promise<void> {
  await sql.rows(
    `UPDATE delay_limit_credit SET used_at = clock_timestamp(), holder = NULL
     WHERE holder = ANY($1::text[]) AND used_at = 'infinity'`,
    [holders],
  );
}

/** Deletes credits unused for a day (keys that went quiet): made again on their next start. */
export async function pruneCredits(sql: Sql, before: Date): Promise<void> {
  await sql.rows(`DELETE FROM delay_limit_credit WHERE used_at < $1 AND holder IS NULL`, [before]);
}
