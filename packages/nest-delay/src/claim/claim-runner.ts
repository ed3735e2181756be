import { DatabaseClock } from '../clock/index.js';
import { errorText } from '../delay.messages.js';
import { retryDelayMs } from '../delay.options.js';
import { type TaskWheel, followFate } from '../firing/task-wheel.js';
import type { HandlerRegistry } from '../handler-registry.js';
import type { LimitGate } from '../limits/limit-gate.js';
import type { LineClaim } from '../limits/gate-claims.js';
import { lineCheckInScript } from '../limits/limit-statements.js';
import type { LineRefusal } from '../limits/gate-line.types.js';
import type { DelayContext } from '../context/delay-context.js';
import { FAILED_CLAIM_RETRY_MIN_MS, NOTE_ID_BLOCK } from '../context/tuning.js';
import {
  claimConnection,
  isPoolerAnswer,
  type ClaimConnection,
} from '../store/claim-connection.js';
import type { TaskId } from '../task.types.js';
import type { Sql } from '../store/sql.js';
import { charge, type Fate } from '../tasks/task-transitions.js';
import { writeCharge } from '../tasks/fate-statements.js';
import { forgetAttempts, forgetOnceUnlocked } from './attempt-notes.js';
import { ClaimBatch, type BatchResult } from './claim-batch.js';
import {
  claimInScript,
  readClaimed,
  recordAttemptAndBegin,
  reserveNoteIds,
  type PassedRow,
} from './claim-statements.js';
import { HandlerCutOff } from './attempt-runner.js';
import { ExecutionStats, reportClaim, reportFate } from '../observer/observer-calls.js';

/** What a claim hands back to the dispatcher that launched it. */
export interface ClaimHost {
  readonly stopped: boolean;
  /** Ids to queue again for a claim. */
  enqueue(ids: TaskId[]): void;
  /** A task that may only run alone: it gets a claim of its own. */
  queueAlone(id: TaskId): void;
  /** The claim of these ids is over: they may be queued again. */
  claimEnded(ids: TaskId[]): void;
}

/**
 * One claim's life, on a connection of its own: its attempt note committed
 * with its BEGIN, the batch (ClaimBatch), then the wheel follows each fate,
 * the counters and the observer (observer-calls.ts) hear of them, ids the
 * claim could not lock are held again, and a handler cut off past its
 * timeout is charged. It keeps track of its notes: the claims in flight
 * (cut off at stop) and the notes it could not delete yet.
 */
export class ClaimRunner {
  private readonly noteIds = new NoteIds();
  /** Claim connections in use, with the note each is running (once noted): cut off at stop. */
  private readonly inFlight = new Map<ClaimConnection, string | undefined>();
  /**
   * Notes of claims that ended with no task at fault (failed as a whole, or
   * cut off by a stop) that could not be deleted yet (the database was
   * unreachable): deleted before the next claim, so an outage does not leave
   * their tasks looking cut off.
   */
  private unforgotten: string[] = [];
  readonly stats = new ExecutionStats();
  private readonly batch: ClaimBatch;
  /** Ids a claim could not lock once, held again at once (see followPassed). */
  private readonly passedOnce = new Set<TaskId>();

  constructor(
    private readonly ctx: DelayContext,
    private readonly registry: HandlerRegistry,
    private readonly wheel: TaskWheel,
    private readonly gate: LimitGate,
    private readonly host: ClaimHost,
  ) {
    this.batch = new ClaimBatch(ctx, registry);
  }

  /** The time limits are kept in: the database's (null) unless the module runs on a clock of a test's. */
  limitNowMs(): number | null {
    return this.ctx.clock instanceof DatabaseClock ? null : this.ctx.clock.now();
  }

  /** One claim transaction and what follows it; 'cut-off' when a handler outlived its timeout. */
  async run(
    ids: TaskId[],
    alone: boolean,
    line?: LineClaim,
  ): Promise<BatchResult | 'cut-off' | undefined> {
    const { ctx, host } = this;
    const gated = line?.gated;
    let connection: ClaimConnection | undefined;
    let noteId: string | undefined;
    let result: BatchResult;
    let nowMs: number;
    let startedAt: number;
    try {
      connection = await claimConnection(ctx.db);
      startedAt = performance.now();
      // A stop that came while this waited for a connection has already cut off the others.
      if (host.stopped) return undefined;
      this.inFlight.set(connection, undefined);
      nowMs = ctx.clock.now();
      if (this.unforgotten.length > 0) {
        const stale = this.unforgotten.splice(0);
        await forgetAttempts(connection.sql, stale).catch(() => this.unforgotten.push(...stale));
      }
      noteId = await this.noteIds.take(connection.sql);
      this.inFlight.set(connection, noteId);
      const now = new Date(nowMs);
      // Sent in the same message as the BEGIN (one round trip fewer): a
      // gate's claim its line check, a batch of fired tasks its claim; a
      // claim alone charges orphaned notes before its claim.
      const claim = gated
        ? lineCheckInScript(connection.script, gated, ctx.options.instanceId, line?.credits)
        : alone
          ? undefined
          : claimInScript(
              connection.script,
              ids,
              now,
              noteId,
              ctx.policy.overdueAfterMs,
              ctx.policy.handledTypes,
            );
      // Committed before the claim begins (in the same round trip as its
      // BEGIN): survives the claim if it never commits.
      const claimed = await recordAttemptAndBegin(
        connection,
        noteId,
        ctx.options.instanceId,
        ids,
        now,
        this.batch.backstopMs,
        claim,
      );
      result = await this.batch.run(connection, ids, {
        nowMs,
        noteId,
        alone,
        claimed: claimed && !gated ? readClaimed(claimed, now) : undefined,
        line: gated && {
          type: gated.line.type,
          refused: (claimed as Array<{ refused: LineRefusal | null }>)[0]?.refused ?? null,
        },
        onStart: line?.onStart,
      });
    } catch (error) {
      if (error instanceof HandlerCutOff && noteId !== undefined && !host.stopped) {
        await this.chargeCutOff(error, noteId, ids);
        return 'cut-off';
      }
      // Its session may still hold the note's lock, or be broken: close it rather than reuse it.
      connection?.cutOff();
      // Failed as a whole (or stopped): no task's fault, so its note goes, once
      // the closed session has let go of it (before the next claim, if not by then).
      if (noteId !== undefined && (await forgetOnceUnlocked(ctx.db.pool, [noteId])).length > 0)
        this.unforgotten.push(noteId);
      if (host.stopped) return undefined;
      // Nothing committed: every id is still pending in the database. A
      // pooler's answer to a prepared claim turned preparing off (reported
      // once, by PreparedStatements): claimed again at once, unprepared.
      if (isPoolerAnswer(error)) {
        this.holdAll(ids, ctx.clock.now(), gated?.line.type);
        return undefined;
      }
      ctx.logger.error(
        `Claim transaction for ${ids.length} task(s) failed, retrying them shortly: ${errorText(error)}`,
      );
      this.holdAll(ids, this.retrySoonMs(), gated?.line.type);
      return undefined;
    } finally {
      if (connection) {
        this.inFlight.delete(connection);
        await connection.release();
      }
    }
    this.stats.record(result.fates, result.rerun);
    // Time a gate's task waited for its limit is not the engine's lateness.
    const limitWaits = gated
      ? new Map(gated.items.map((item) => [item.id, Math.max(0, nowMs - item.sinceMs)]))
      : undefined;
    const counts = { requested: ids.length, claimed: result.claimedIds.size };
    reportClaim(
      ctx.observer,
      result.fates,
      counts,
      nowMs,
      performance.now() - startedAt,
      limitWaits,
    );
    for (const fate of result.fates) followFate(this.wheel, ctx, fate);
    // Every id given is claimed (its fate followed above), left to run alone, gated,
    // back in its line (`left`, GateClaims.run), unhandled, passed, or no
    // longer pending (nothing to do): none is left nowhere. Gated: this
    // instance did not know its type was limited; the gate reads the limits again.
    if (result.gated.length > 0) this.gate.take(result.gated, true);
    if (!gated) for (const id of result.alone) host.queueAlone(id);
    this.handBack(result.unhandled);
    this.followPassed(ids, result.passed);
    return result;
  }

  /**
   * Due tasks of types with no handler here: the claim let their lease go,
   * and they leave the wheel, for an instance that has a handler (they were
   * leased here by another version of this instance, or by hand).
   */
  private handBack(ids: TaskId[]): void {
    for (const id of ids) this.wheel.drop(id);
    if (ids.length === 0) return;
    this.ctx.logger.warn(
      `${ids.length} due task(s) of a type with no handler on this instance were left for an instance that has one: ${ids.join(', ')}`,
    );
  }

  /**
   * At stop: destroys every claim connection in use (their transactions roll
   * back, as a crash's would), then deletes their notes, so no attempt is
   * charged: the process chose to stop them, not their tasks.
   */
  async cutOffAll(): Promise<void> {
    const notes = [...this.inFlight.values()].filter((id): id is string => id !== undefined);
    for (const connection of this.inFlight.keys()) connection.cutOff();
    this.inFlight.clear();
    await forgetOnceUnlocked(this.ctx.db.pool, notes);
  }

  /** Claimed again after a tick, never sooner than FAILED_CLAIM_RETRY_MIN_MS. */
  retrySoonMs(): number {
    return this.ctx.clock.now() + Math.max(this.ctx.options.tickMs, FAILED_CLAIM_RETRY_MIN_MS);
  }

  /** `type` undefined: the types they are held with, if any (see TaskWheel.hold). */
  holdAll(ids: TaskId[], dueAtMs: number, type?: string): void {
    for (const id of ids) this.wheel.hold(id, dueAtMs, type);
  }

  /**
   * A handler ignored its timeout and its claim was cut off: every effect of
   * the batch rolled back. Its attempt is charged (retried with backoff, or
   * exhausted); its batch-mates were never at fault and run again now.
   */
  private async chargeCutOff(cut: HandlerCutOff, noteId: string, ids: TaskId[]): Promise<void> {
    const { ctx } = this;
    const { row } = cut;
    const nowMs = ctx.clock.now();
    const retryAtMs = nowMs + retryDelayMs(this.registry.backoffOf(row.type), row.attempts);
    // The claim that counted this attempt rolled back: charge it on the row as it is.
    const before = { ...row, attempts: row.attempts - 1 };
    const change = charge(before, 1, cut.message, retryAtMs, nowMs, ctx.policy);
    ctx.logger.error(`Task ${row.id} (${row.type}): ${cut.message}`);
    try {
      const charged = await writeCharge(ctx.db.pool, change, new Date(nowMs), noteId);
      if (charged) {
        const fate: Fate = { ...change, row };
        this.stats.recordOne(fate);
        reportFate(ctx.observer, fate, nowMs);
        followFate(this.wheel, ctx, fate);
      } else {
        // The row was not as claimed (a charge in the same claim rolled back
        // with it): its note stays, orphaned, and the task's next claim, alone,
        // charges what the table says. Claimed again soon, not stranded.
        this.wheel.hold(row.id, this.retrySoonMs(), row.type);
      }
    } catch (error) {
      // Uncharged, rather than let its note charge the batch-mates below as
      // well. Still leased here, so no loader would take it: held here, and
      // claimed again soon (its note, forgotten, defers nothing).
      this.unforgotten.push(noteId);
      this.wheel.hold(row.id, this.retrySoonMs(), row.type);
      ctx.logger.error(
        `Charging the cut-off task ${row.id} failed, claiming it again shortly, uncharged: ${errorText(error)}`,
      );
    }
    // Their claim is over: they may be queued again at once.
    this.host.claimEnded(ids);
    this.host.enqueue(ids.filter((id) => id !== row.id));
  }

  /**
   * Ids a claim could not lock, still pending: held again here unless leased
   * elsewhere. Moved later: at their new due time. Held by another
   * transaction, which may still roll back: the first time at once (most
   * often a moment's lock, the loader leasing it just then), the next a tick
   * later, so a row a long transaction holds is not claimed in a tight loop.
   */
  private followPassed(ids: TaskId[], rows: PassedRow[]): void {
    if (this.passedOnce.size > 0) {
      const passed = new Set(rows.map((row) => row.id));
      for (const id of ids) if (!passed.has(id)) this.passedOnce.delete(id);
    }
    const nowMs = this.ctx.clock.now();
    for (const row of rows) {
      if (row.lockedBy !== null && !this.ctx.policy.holds(row.lockedBy)) continue;
      const again = this.passedOnce.delete(row.id);
      if (!again) this.passedOnce.add(row.id);
      const dueAtMs = again ? Math.max(row.dueAtMs, nowMs + this.ctx.options.tickMs) : row.dueAtMs;
      this.wheel.hold(row.id, dueAtMs, row.type);
    }
  }
}

/**
 * Attempt note ids, taken from delay_attempt's sequence a block at a time.
 * A claim knows its note's id before sending the message that writes the
 * note, so the claim statement can ride in that message, and a failure of
 * that message still knows which note to forget. Ids never go back: one
 * taken and unused is a gap in the sequence, as a rolled-back insert leaves.
 */
class NoteIds {
  private ids: string[] = [];
  private refill: Promise<void> | undefined;

  async take(sql: Sql): Promise<string> {
    while (this.ids.length === 0) {
      // Claims that run out at once share one reservation.
      this.refill ??= reserveNoteIds(sql, NOTE_ID_BLOCK)
        .then((ids) => {
          this.ids.push(...ids);
        })
        .finally(() => {
          this.refill = undefined;
        });
      await this.refill;
    }
    return this.ids.shift() as string;
  }
}
