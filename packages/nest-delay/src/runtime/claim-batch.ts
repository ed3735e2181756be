import { retryDelayMs } from '../delay.options.js';
import { errorText, noHandlerAtRun } from '../delay.messages.js';
import type { HandlerRegistry } from '../handler-registry.js';
import {
  claimTasks,
  deadLetter,
  deadLetterUnrun,
  retryLater,
  snoozeTask,
  type ClaimRow,
} from '../store/claim-statements.js';
import type { ClaimConnection } from '../store/sql.js';
import { toTask, type TaskRow } from '../store/task-row.js';
import { TaskOutcome } from '../task-outcome.js';
import { compareIds } from '../task-ref.js';
import type { TaskId } from '../task.types.js';
import type { DelayContext } from './delay-context.js';
import { HandlerCutOff, withDeadline } from './handler-deadline.js';
import { runInTaskScope, type CurrentTask } from '../observer/task-scope.js';
import { AfterCommit } from '../observer/after-commit.js';

/**
 * What became of one claimed task (`task`: its row as claimed, this attempt
 * counted). `held`: due again within the window, so this wheel keeps it.
 * `reason`: the error or discard reason.
 */
export type Outcome =
  | { kind: 'executed'; id: TaskId; type: string; task: TaskRow }
  | { kind: 'dead'; id: TaskId; type: string; task: TaskRow; reason: string }
  | {
      kind: 'retry' | 'snooze';
      id: TaskId;
      type: string;
      task: TaskRow;
      dueAtMs: number;
      held: boolean;
      reason?: string;
    };

export interface BatchResult {
  claimedIds: Set<TaskId>;
  /** Tasks whose last attempt was cut off, not claimed in a batch: each gets a claim of its own. */
  deferred: TaskId[];
  outcomes: Outcome[];
  /** The optimistic pass failed and the batch ran again, fenced task by task. */
  rerun: boolean;
}

/** The optimistic pass failed: rerun fenced, failing these tasks without running them again. */
class Redo {
  constructor(readonly failures: Map<TaskId, unknown>) {}
}
const SAVEPOINT = 'delayed_task';
/** How long a handler gets after its signal aborts before it is cut off. */
const GRACE_MS = 1000;
/** Postgres-side limits sit this far above the longest handler timeout. */
const BACKSTOP_MARGIN_MS = 10_000;

/** One claim's parameters beyond its ids. */
export interface ClaimPlan {
  nowMs: number;
  /** Its row in delay_attempt, deleted by the claim. */
  attemptId: string;
  /** A claim of one task whose last attempt was cut off: the only kind that may claim such a task. */
  alone: boolean;
  /** The connection is already inside the claim's transaction (begun with the note). */
  begun?: boolean;
}

/**
 * One claim transaction: claims the due tasks among `ids`, runs their handlers
 * with the transaction's EntityManager, and commits claims and effects together.
 *
 * It first runs the batch optimistically, with no savepoints (one round trip
 * per task, as a cron job's batch would). If any handler fails, everything is
 * rolled back and the batch runs again with a savepoint per task, so that the
 * failing task is undone alone and the others commit. Database effects stay
 * exactly-once either way; a handler's effects outside the database may run
 * twice, which their at-least-once contract already allows.
 */
export class ClaimBatch {
  constructor(
    private readonly ctx: DelayContext,
    private readonly registry: HandlerRegistry,
  ) {}

  async run(connection: ClaimConnection, ids: TaskId[], plan: ClaimPlan): Promise<BatchResult> {
    // Optimistic even for one task: a success, the common case, then pays no
    // savepoint round trips, which a task fired alone at its due time would
    // feel as lateness; a failure costs one rollback, never a second run.
    const first = await this.transaction(connection, ids, plan, undefined);
    if (!(first instanceof Redo)) return first;
    const result = await this.transaction(
      connection,
      ids,
      { ...plan, begun: false },
      first.failures,
    );
    if (result instanceof Redo) throw new Error('a fenced batch cannot be redone');
    return { ...result, rerun: true };
  }

  /** `known` undefined: the optimistic pass; else fenced, with the failures the optimistic pass saw. */
  private async transaction(
    connection: ClaimConnection,
    ids: TaskId[],
    plan: ClaimPlan,
    known: Map<TaskId, unknown> | undefined,
  ): Promise<BatchResult | Redo> {
    const { runner, sql } = connection;
    if (!plan.begun) await runner.startTransaction();
    try {
      const rows = await claimTasks(
        sql,
        ids,
        new Date(plan.nowMs),
        plan.attemptId,
        plan.alone,
        // Postgres takes at most 2^31 - 1 ms here.
        Math.min(2 ** 31 - 1, this.registry.longestTimeoutMs() + GRACE_MS + BACKSTOP_MARGIN_MS),
      );
      const claimed = rows
        .filter((row) => row.claimed)
        .sort((a, b) => a.due_at.getTime() - b.due_at.getTime() || compareIds(a.id, b.id));
      const outcomes = known
        ? await this.runFenced(connection, claimed, plan.nowMs, known)
        : await this.runOptimistic(connection, claimed, plan.nowMs);
      if (outcomes instanceof Redo) {
        await runner.rollbackTransaction();
        return outcomes;
      }
      // A handler may have swallowed a database error: then COMMIT rolls
      // everything back instead, and the batch runs again fenced.
      if (!(await connection.commit())) return new Redo(new Map());
      return {
        claimedIds: new Set(claimed.map((row) => row.id)),
        deferred: rows.filter((row) => !row.claimed).map((row) => row.id),
        outcomes,
        rerun: false,
      };
    } catch (error) {
      // A cut-off connection is gone, its transaction with it: nothing to roll back.
      if (error instanceof HandlerCutOff) connection.cutOff();
      else if (runner.isTransactionActive)
        await runner.rollbackTransaction().catch(() => undefined);
      throw error;
    }
  }

  private async runOptimistic(
    connection: ClaimConnection,
    claimed: ClaimRow[],
    nowMs: number,
  ): Promise<Outcome[] | Redo> {
    const outcomes: Outcome[] = [];
    for (const row of claimed) {
      let returned: unknown;
      try {
        returned = await this.invoke(connection, row);
      } catch (error) {
        if (error instanceof HandlerCutOff) throw error;
        return new Redo(new Map([[row.id, error]]));
      }
      try {
        outcomes.push(await this.settle(connection, row, returned, nowMs));
      } catch (error) {
        // Its outcome could not be written: it left the transaction aborted.
        return new Redo(new Map([[row.id, leftAborted(error)]]));
      }
    }
    return outcomes;
  }

  private async runFenced(
    connection: ClaimConnection,
    claimed: ClaimRow[],
    nowMs: number,
    known: Map<TaskId, unknown>,
  ): Promise<Outcome[]> {
    const outcomes: Outcome[] = [];
    for (const [index, row] of claimed.entries()) {
      // One round trip per fence: the previous task's savepoint is released
      // and this one's taken in one simple-protocol query.
      if (index === 0) {
        await connection.sql.rows(`SAVEPOINT ${SAVEPOINT}`, []);
        AfterCommit.savepoint(connection.runner);
      } else
        await this.fence(
          connection,
          claimed[index - 1],
          outcomes,
          nowMs,
          `RELEASE SAVEPOINT ${SAVEPOINT}; SAVEPOINT ${SAVEPOINT}`,
        );
      // A task that already failed this attempt is not run a second time in it.
      outcomes.push(
        known.has(row.id)
          ? await this.fail(connection, row, known.get(row.id), nowMs)
          : await this.runOne(connection, row, nowMs),
      );
    }
    // A separate release for the last task: COMMIT on a transaction that a
    // handler left aborted would quietly roll back the whole batch.
    if (claimed.length > 0) {
      await this.fence(
        connection,
        claimed[claimed.length - 1],
        outcomes,
        nowMs,
        `RELEASE SAVEPOINT ${SAVEPOINT}`,
      );
    }
    return outcomes;
  }

  /**
   * Closes the previous task's savepoint. If that fails, its handler returned
   * normally but left the transaction aborted (it swallowed a database error):
   * undo its writes and count it as failed, so the other tasks still commit.
   */
  private async fence(
    connection: ClaimConnection,
    previous: TaskRow,
    outcomes: Outcome[],
    nowMs: number,
    statement: string,
  ) {
    try {
      await connection.sql.rows(statement, []);
    } catch (error) {
      await this.rollbackToSavepoint(connection);
      outcomes[outcomes.length - 1] = await this.fail(
        connection,
        previous,
        leftAborted(error),
        nowMs,
      );
      await connection.sql.rows(statement, []);
    }
    AfterCommit.savepoint(connection.runner);
  }

  /** One task, after its savepoint was taken. */
  private async runOne(
    connection: ClaimConnection,
    row: ClaimRow,
    nowMs: number,
  ): Promise<Outcome> {
    let returned: unknown;
    try {
      returned = await this.invoke(connection, row);
    } catch (error) {
      if (error instanceof HandlerCutOff) throw error;
      await this.rollbackToSavepoint(connection);
      return this.fail(connection, row, error, nowMs);
    }
    try {
      return await this.settle(connection, row, returned, nowMs);
    } catch (error) {
      // It returned an outcome but left its transaction aborted: undo it alone.
      await this.rollbackToSavepoint(connection);
      return this.fail(connection, row, leftAborted(error), nowMs);
    }
  }

  /**
   * Runs the handler under its timeout. A task without a handler here, or
   * whose cut-off attempts used up its maxAttempts, resolves to a discard
   * without running.
   */
  private invoke(connection: ClaimConnection, row: ClaimRow): unknown {
    if (row.interrupted_at && row.attempts > row.max_attempts) return EXHAUSTED;
    const handler = this.registry.get(row.type);
    if (!handler) return TaskOutcome.discard(noHandlerAtRun(row.type));
    const { manager } = connection.runner;
    const { instanceId } = this.ctx.options;
    return withDeadline(
      (controller) =>
        // In the task's scope: whatever the handler logs names the task.
        runInTaskScope(scopeOf(row), () =>
          call(() =>
            handler.fn(row.payload, {
              task: toTask(row),
              manager,
              attempt: row.attempts,
              instanceId,
              // Built when read (see withDeadline). The getter costs ~0.7 us, the signal ~3.5.
              get signal() {
                return controller.signal;
              },
            }),
          ),
        ),
      handler.timeoutMs,
      Math.min(GRACE_MS, handler.timeoutMs),
      () =>
        new HandlerCutOff(row.id, row.type, handler.timeoutMs, row.attempts, row.key, row.due_at),
    );
  }

  /** After the handler returned: executed as claimed, or what its TaskOutcome asks. */
  private settle(
    connection: ClaimConnection,
    row: TaskRow,
    returned: unknown,
    nowMs: number,
  ): Outcome | Promise<Outcome> {
    // The common case writes nothing, so it makes no promise.
    if (returned !== EXHAUSTED && !(returned instanceof TaskOutcome))
      return { kind: 'executed', id: row.id, type: row.type, task: row };
    return this.writeOutcome(connection, row, returned, nowMs);
  }

  private async writeOutcome(
    connection: ClaimConnection,
    row: TaskRow,
    returned: TaskOutcome | typeof EXHAUSTED,
    nowMs: number,
  ): Promise<Outcome> {
    const now = new Date(nowMs);
    if (returned === EXHAUSTED) {
      await deadLetterUnrun(connection.sql, row.id, now);
      const reason = `its last ${row.max_attempts} attempt(s) were cut off (${row.last_error})`;
      this.log(row, 'error', `Task ${row.id} (${row.type}) dead-lettered: ${reason}`);
      return { kind: 'dead', id: row.id, type: row.type, task: row, reason };
    }
    if (returned.kind === 'discard') {
      const reason = returned.reason ?? 'discarded';
      await deadLetter(connection.sql, row.id, reason, now);
      this.log(row, 'error', `Task ${row.id} (${row.type}) dead-lettered at once: ${reason}`);
      return { kind: 'dead', id: row.id, type: row.type, task: row, reason };
    }
    const dueAtMs = nowMs + returned.snoozeMs;
    const held = this.ctx.policy.isWithinWindow(dueAtMs, nowMs);
    await snoozeTask(
      connection.sql,
      row.id,
      new Date(dueAtMs),
      held ? this.ctx.options.instanceId : null,
      now,
    );
    return { kind: 'snooze', id: row.id, type: row.type, task: row, dueAtMs, held };
  }

  /** Inside the savepoint, after its rollback: retry later with backoff, or dead-letter. */
  private async fail(
    connection: ClaimConnection,
    row: TaskRow,
    error: unknown,
    nowMs: number,
  ): Promise<Outcome> {
    const now = new Date(nowMs);
    const message = errorText(error);
    if (row.attempts >= row.max_attempts) {
      await deadLetter(connection.sql, row.id, message, now);
      this.log(
        row,
        'error',
        `Task ${row.id} (${row.type}) dead-lettered after ${row.attempts} attempt(s): ${message}`,
      );
      return { kind: 'dead', id: row.id, type: row.type, task: row, reason: message };
    }
    const dueAtMs = nowMs + retryDelayMs(this.registry.backoffOf(row.type), row.attempts);
    // A retry beyond the window is left for whichever instance loads it then.
    const held = this.ctx.policy.isWithinWindow(dueAtMs, nowMs);
    await retryLater(
      connection.sql,
      row.id,
      message,
      new Date(dueAtMs),
      held ? this.ctx.options.instanceId : null,
      now,
    );
    this.log(
      row,
      'warn',
      `Task ${row.id} (${row.type}) failed attempt ${row.attempts}/${row.max_attempts}, retrying at ${new Date(dueAtMs).toISOString()}: ${message}`,
    );
    return {
      kind: 'retry',
      id: row.id,
      type: row.type,
      task: row,
      dueAtMs,
      held,
      reason: message,
    };
  }

  /** Undoes the current task's writes, and what it queued for after commit (AfterCommit). */
  private async rollbackToSavepoint(connection: ClaimConnection): Promise<void> {
    await connection.sql.rows(`ROLLBACK TO SAVEPOINT ${SAVEPOINT}`, []);
    AfterCommit.rolledBackToSavepoint(connection.runner);
  }

  /** A line about one task, inside its scope: a structured logger adds its id, type, key and attempt. */
  private log(row: TaskRow, level: 'warn' | 'error', message: string): void {
    runInTaskScope(scopeOf(row), () => this.ctx.logger[level](message));
  }
}

function leftAborted(error: unknown): Error {
  return new Error(`handler returned but left its transaction aborted (${errorText(error)})`);
}

/** A handler's result as a promise: one that throws before its first await rejects it. */
function call(fn: () => unknown): Promise<unknown> {
  try {
    return Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(error);
  }
}

/** What invoke returns for a task dead-lettered by its cut-off attempts, without running it. */
const EXHAUSTED = Symbol('exhausted');

function scopeOf(row: TaskRow): CurrentTask {
  return { id: row.id, type: row.type, key: row.key, attempt: row.attempts };
}
