import { errorText } from '../delay.messages.js';
import type { HandlerRegistry } from '../handler-registry.js';
import { AfterCommit } from '../observer/after-commit.js';
import { takeOrphanedNotes } from './attempt-notes.js';
import {
  claimTasks,
  readClaimed,
  unlockNoteOnceGone,
  type Claimed,
  type PassedRow,
} from './claim-statements.js';
import type { ClaimRow } from '../tasks/task-row.js';
import { deleteNote, LineRun, type LineGating } from '../limits/limit-statements.js';
import { failedDeferredCheck, type ClaimConnection } from '../store/claim-connection.js';
import { writeCharge, writeFate } from '../tasks/fate-statements.js';
import type { PassSpans } from '../tracing/pass-spans.js';
import type { TaskId } from '../task.types.js';
import {
  charge,
  fail,
  hasAttemptsLeft,
  noteChargeReason,
  type Fate,
  type TransitionRules,
} from '../tasks/task-transitions.js';
import type { DelayContext } from '../context/delay-context.js';
import { AttemptRunner, HandlerCutOff, logFate } from './attempt-runner.js';
import { BACKSTOP_MARGIN_MS, CUT_OFF_GRACE_MS } from '../context/tuning.js';
import type { LineRefusal } from '../limits/gate-line.types.js';

/* What a claim transaction (ClaimBatch) is asked to do, and what it comes to. */

export interface BatchResult {
  claimedIds: Set<TaskId>;
  /** Due tasks the database says are of a limited or paused type, unclaimed: to the limit gate. */
  gated: TaskId[];
  /** Why a gate's claim stopped short: its type paused, its seats held elsewhere, no credit for a rate. */
  refused: LineRefusal | null;
  /** A gate's claim: tasks it did not try (it stopped short, or ran its time): back to their line. */
  left: TaskId[];
  /** Due tasks left unclaimed because they may only run alone: each gets a claim of its own. */
  alone: TaskId[];
  /** Ids it could not lock, still pending (moved later, or held by another transaction). */
  passed: PassedRow[];
  /** Due, of a type with no handler here: unclaimed, their lease let go. */
  unhandled: TaskId[];
  /** What became of each claimed task, and of tasks a charge exhausted before their claim. */
  fates: Fate[];
  /** The optimistic pass failed and the batch ran again with a savepoint a task. */
  rerun: boolean;
}

/** One claim's parameters beyond its ids. */
export interface ClaimParams {
  nowMs: number;
  /** Its attempt note, committed before the claim began; the claim deletes it. */
  noteId: string;
  /** A claim of one task that may only run alone: the only kind that charges orphaned notes. */
  alone: boolean;
  /** What the claim statement sent with the BEGIN took (claimInScript); undefined: not claimed yet. */
  claimed?: Claimed;
  /** A gate's claim: its line's tasks claimed in one statement under their limits, started one at a time (LineRun). */
  line?: LineGating;
  /** Called once a handler has started (its synchronous part ran): a rate credit is stamped then. */
  onStart?: (row: ClaimRow) => void;
}

/** The optimistic pass failed: rerun with savepoints, with the fates its failures already decided. */
class Redo {
  constructor(readonly failures: Map<TaskId, Fate>) {}
}

/**
 * One claim transaction, which the dispatcher has begun (with its attempt
 * note): claims the due tasks among `ids`, runs their handlers with the
 * transaction's EntityManager, writes each one's fate, and commits claims,
 * effects and fates together. This class handles the transaction and its
 * savepoints; what each task comes to is decided in task-transitions.ts.
 *
 * It first runs the batch optimistically, with no savepoints (one round trip
 * per task, as a cron job's batch would). If any handler fails, everything is
 * rolled back and the batch runs again with a savepoint per task, so that the
 * failing task is undone alone and the others commit. Database effects stay
 * exactly-once either way; a handler's effects outside the database may run
 * twice, which their at-least-once contract already allows.
 */
export class ClaimBatch {
  private readonly rules: TransitionRules;
  private readonly attempts: AttemptRunner;

  constructor(
    private readonly ctx: DelayContext,
    private readonly registry: HandlerRegistry,
  ) {
    this.rules = { policy: ctx.policy, backoffOf: (type) => registry.backoffOf(type) };
    this.attempts = new AttemptRunner(ctx, registry, this.rules);
  }

  /** Postgres-side limits of a claim transaction (see BACKSTOP_MARGIN_MS). */
  get backstopMs(): number {
    return this.registry.longestTimeoutMs() + CUT_OFF_GRACE_MS + BACKSTOP_MARGIN_MS;
  }

  async run(connection: ClaimConnection, ids: TaskId[], plan: ClaimParams): Promise<BatchResult> {
    // Optimistic even for one task: a success, the common case, then pays no
    // savepoint round trips, which a task fired alone at its due time would
    // feel as lateness; a failure costs one rollback, never a second run.
    // The handlers' spans, when an OpenTelemetry SDK records them (see PassSpans).
    const spans = this.ctx.tracing?.pass();
    // A gate's claim runs with savepoints from the start: a failure never starts a handler twice.
    if (plan.line) {
      const result = await this.pass(connection, ids, plan, new Map(), spans);
      if (!(result instanceof Redo)) return result;
      spans?.rolledBack();
      throw new Error(
        'the claim could not commit (a statement left its transaction aborted, or a deferred constraint failed at COMMIT)',
      );
    }
    const first = await this.pass(connection, ids, plan, undefined, spans);
    if (!(first instanceof Redo)) return first;
    // The runs it undid end as rolled back; the failures it knows keep their spans.
    spans?.rolledBack(first.failures.keys());
    // The note is still there and still locked: the rollback restored it,
    // and its lock is dropped only after a commit (unlockNoteOnceGone).
    await connection.restart(this.backstopMs);
    const result = await this.pass(connection, ids, plan, first.failures, spans);
    if (result instanceof Redo) {
      spans?.rolledBack();
      throw new Error('a batch with savepoints cannot be redone');
    }
    return { ...result, rerun: true };
  }

  /** `known` undefined: the optimistic pass; else with savepoints, with the failures the optimistic pass saw. */
  private async pass(
    connection: ClaimConnection,
    ids: TaskId[],
    plan: ClaimParams,
    known: Map<TaskId, Fate> | undefined,
    spans: PassSpans | undefined,
  ): Promise<BatchResult | Redo> {
    const { sql } = connection;
    try {
      const exhausted = plan.alone ? await this.chargeOrphanedNotes(connection, ids, plan) : [];
      const now = new Date(plan.nowMs);
      const { line } = plan;
      // The optimistic pass may have its claim already (sent with the BEGIN); a
      // rerun claims again. A gate's claim its line's tasks, cleared for their
      // type by its line check, unless that refused (then only its note goes).
      let result: Claimed;
      // Not tried (refused), or claimed and not started: back to their line.
      const left: TaskId[] = line?.refused ? [...ids] : [];
      if (line?.refused) {
        await deleteNote(sql, plan.noteId);
        result = readClaimed([], now); // nothing claimed
      } else if (!known && plan.claimed) result = plan.claimed;
      else {
        const cleared = line?.type ?? null;
        result = await claimTasks(
          sql,
          ids,
          now,
          plan.noteId,
          plan.alone,
          cleared,
          this.ctx.policy.overdueAfterMs,
          this.ctx.policy.handledTypes, // no other type is claimed (WindowPolicy.handles)
        );
      }
      const { claimed } = result; // in due order
      let started = claimed;
      let fates: Fate[] | Redo;
      if (line) {
        // Always with savepoints, asking before each start whether a pause waits; what did not start is put back.
        const run = new LineRun(sql, claimed, now, connection.script.literal(line.type));
        fates = await this.runWithSavepoints(connection, run, plan, known ?? new Map(), spans);
        left.push(...(await run.putBack()));
        started = run.started;
      } else {
        const rows = claimed.values();
        const next = () => rows.next().value;
        fates = known
          ? await this.runWithSavepoints(connection, { next }, plan, known, spans)
          : await this.runOptimistic(connection, claimed, plan, spans);
      }
      if (fates instanceof Redo) return fates;
      // A handler may have swallowed a database error, or broken a deferred
      // constraint: then nothing commits, and the batch runs again with savepoints,
      // where each task's savepoint is checked (see ClaimConnection.savepoint).
      // A task claimed alone: its COMMIT shows under its span too.
      const commit = () => connection.commit(unlockNoteOnceGone(plan.noteId));
      if (!(await (spans ? spans.withinOnly(commit) : commit()))) return new Redo(new Map());
      spans?.committed([...exhausted, ...fates]);
      for (const fate of [...exhausted, ...fates]) logFate(this.ctx.logger, fate);
      return {
        claimedIds: new Set(started.map((row) => row.id)),
        alone: result.alone,
        passed: result.passed,
        unhandled: result.unhandled,
        gated: result.gated,
        refused: line?.refused ?? null,
        left,
        fates: [...exhausted, ...fates],
        rerun: false,
      };
    } catch (error) {
      // The connection is closed, never rolled back and reused: its session
      // ends with the claim, and the note's session lock with it. A ROLLBACK
      // would end the transaction first, and a pooler in transaction mode
      // would take the server session back, lock and all.
      connection.cutOff();
      // Charged by the dispatcher: retried, or dead-lettered when it was the last attempt.
      if (error instanceof HandlerCutOff)
        spans?.cutOff(error.row.id, hasAttemptsLeft(error.row) ? 'retry' : 'dead', error.message);
      spans?.rolledBack();
      throw error;
    }
  }

  /**
   * Charges a task that runs alone with the attempts its orphaned notes hold
   * against it, before its claim; returns those that ran out of attempts
   * (dead-lettered now, so the claim passes them by).
   */
  private async chargeOrphanedNotes(
    connection: ClaimConnection,
    ids: TaskId[],
    plan: ClaimParams,
  ): Promise<Fate[]> {
    const exhausted: Fate[] = [];
    const now = new Date(plan.nowMs);
    for (const { row, times, instanceId } of await takeOrphanedNotes(
      connection.sql,
      ids,
      plan.noteId,
    )) {
      const reason = noteChargeReason(row.attempts + times, instanceId);
      const change = charge(row, times, reason, row.due_at.getTime(), plan.nowMs, this.ctx.policy);
      await writeCharge(connection.sql, change, now, null);
      if (change.transition === 'exhaust') exhausted.push(change);
    }
    return exhausted;
  }

  /** The optimistic pass: handlers one after another, no savepoints; the first failure undoes the pass. */
  private async runOptimistic(
    connection: ClaimConnection,
    claimed: ClaimRow[],
    plan: ClaimParams,
    spans: PassSpans | undefined,
  ): Promise<Fate[] | Redo> {
    const fates: Fate[] = [];
    const { nowMs } = plan;
    const now = new Date(nowMs);
    for (const row of claimed) {
      let fate = await this.attempts.run(connection, row, plan.nowMs, spans, plan.onStart);
      if (undoes(fate)) return new Redo(new Map([[row.id, fate]]));
      try {
        await within(spans, row.id, () => writeFate(connection.sql, fate, now));
      } catch (error) {
        // Its fate could not be written: it left the transaction aborted.
        fate = fail(row, leftAborted(error), nowMs, this.rules);
        return new Redo(new Map([[row.id, fate]]));
      }
      fates.push(fate);
    }
    return fates;
  }

  /**
   * Runs the claimed tasks `source` hands out, each in a savepoint of its
   * own. A gate's claim (LineRun) gives a `probe` asked in each savepoint step
   * before a start after the first: when it says stop, that task and the
   * rest are not started (`stopBefore`).
   */
  private async runWithSavepoints(
    connection: ClaimConnection,
    source: RowSource,
    plan: ClaimParams,
    known: Map<TaskId, Fate>,
    spans: PassSpans | undefined,
  ): Promise<Fate[]> {
    const fates: Fate[] = [];
    const { nowMs } = plan;
    for (let index = 0, row = source.next(); row; index++, row = source.next()) {
      // One round trip per savepoint step: the previous task's deferred constraints
      // are checked, its savepoint released and this one's taken.
      const probe = index === 0 ? undefined : source.probe;
      const step = index === 0 ? 'first' : 'next';
      if (!(await this.savepointStep(connection, fates, nowMs, step, probe))) {
        source.stopBefore?.(row);
        break;
      }
      // A task that already failed this attempt is not run a second time in it.
      const fate =
        known.get(row.id) ??
        (await this.attempts.run(connection, row, plan.nowMs, spans, plan.onStart));
      if (undoes(fate) && !known.has(row.id)) await this.rollbackToSavepoint(connection);
      fates.push(await within(spans, row.id, () => this.write(connection, fate, nowMs)));
    }
    // A separate release for the last task: COMMIT on a transaction that a
    // handler left aborted would quietly roll back the whole batch. (After a
    // probe's stop, the savepoint it opened is empty: released here too.)
    if (fates.length > 0) await this.savepointStep(connection, fates, nowMs, 'last');
    return fates;
  }

  /**
   * Takes one savepoint step: closes the previous task's savepoint (if any)
   * and opens the next. If that fails, the previous handler returned normally
   * but left the transaction aborted (it swallowed a database error), or its
   * writes break a deferred constraint: its writes are undone and it fails,
   * so the other tasks still commit.
   */
  private async savepointStep(
    connection: ClaimConnection,
    fates: Fate[],
    nowMs: number,
    step: 'first' | 'next' | 'last',
    probe?: string,
  ): Promise<boolean> {
    let goOn: boolean;
    try {
      goOn = await connection.savepoint(step, probe);
    } catch (error) {
      const previous = fates[fates.length - 1];
      // 'first' closes nothing: a failure there is not the task before's.
      if (!previous || step === 'first') throw error;
      await this.rollbackToSavepoint(connection);
      const failed = fail(previous.row, failedAtSavepoint(error), nowMs, this.rules);
      fates[fates.length - 1] = await this.write(connection, failed, nowMs);
      goOn = await connection.savepoint(step, probe);
    }
    AfterCommit.savepoint(connection.runner);
    return goOn;
  }

  /** Writes a fate inside the task's savepoint; if the handler left it aborted, undoes it and fails it. */
  private async write(connection: ClaimConnection, fate: Fate, nowMs: number): Promise<Fate> {
    const now = new Date(nowMs);
    try {
      await writeFate(connection.sql, fate, now);
      return fate;
    } catch (error) {
      await this.rollbackToSavepoint(connection);
      const failed = fail(fate.row, leftAborted(error), nowMs, this.rules);
      await writeFate(connection.sql, failed, now);
      return failed;
    }
  }

  /** Undoes the current task's writes, and what it queued for after commit (AfterCommit). */
  private async rollbackToSavepoint(connection: ClaimConnection): Promise<void> {
    await connection.rollbackToSavepoint();
    AfterCommit.rolledBackToSavepoint(connection.runner);
  }
}

/** Hands a savepoint pass its claimed tasks one at a time (see runWithSavepoints). */
interface RowSource {
  next(): ClaimRow | undefined;
  probe?: string;
  stopBefore?(row: ClaimRow): void;
}

/** A failed attempt's writes are undone before its fate is written. */
const undoes = (fate: Fate) => fate.transition === 'retry' || fate.transition === 'exhaust';

function leftAborted(error: unknown): string {
  return errorText(
    new Error(`handler returned but left its transaction aborted (${errorText(error)})`),
  );
}

/** Why a task's savepoint step failed: a deferred constraint its writes break, or a transaction it left aborted. */
function failedAtSavepoint(error: unknown): string {
  if (!failedDeferredCheck(error)) return leftAborted(error);
  return errorText(
    new Error(`its writes break a constraint checked at commit (${errorText(error)})`),
  );
}

/** `fn` under the task's span, when there are spans. */
function within<T>(spans: PassSpans | undefined, id: TaskId, fn: () => T): T {
  return spans ? spans.within(id, fn) : fn();
}
