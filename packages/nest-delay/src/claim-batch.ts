import type { Logger } from '@nestjs/common';
import type { QueryRunner } from 'typeorm';
import { retryDelayMs, type ResolvedDelayOptions } from './delay.options.js';
import { errorText, noHandlerAtRun } from './delay.messages.js';
import type { HandlerRegistry } from './handler-registry.js';
import { CLAIM_TASKS, DEAD_LETTER_TASK, RETRY_TASK_LATER } from './sql/claim-tasks.js';
import { toTask, type TaskRow } from './task-row.js';

/** What became of one claimed task: ran, dead-lettered, or back to pending for a retry. */
export type Outcome = 'executed' | 'dead' | Retry;
export interface Retry {
  id: number;
  dueAtMs: number;
  /** Still due within the window, so this instance keeps it in its wheel. */
  held: boolean;
}

export interface BatchResult {
  claimedIds: Set<number>;
  outcomes: Outcome[];
  /** The optimistic pass failed and the batch ran again, fenced task by task. */
  rerun: boolean;
}

const REDO = Symbol('redo');

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
    private readonly registry: HandlerRegistry,
    private readonly options: ResolvedDelayOptions,
    private readonly logger: Logger,
  ) {}

  async run(runner: QueryRunner, ids: number[], nowMs: number): Promise<BatchResult> {
    if (ids.length > 1) {
      const result = await this.transaction(runner, ids, nowMs, false);
      if (result !== REDO) return result;
    }
    const result = await this.transaction(runner, ids, nowMs, true);
    if (result === REDO) throw new Error('a fenced batch cannot be redone');
    return { ...result, rerun: ids.length > 1 };
  }

  private async transaction(
    runner: QueryRunner,
    ids: number[],
    nowMs: number,
    fenced: boolean,
  ): Promise<BatchResult | typeof REDO> {
    await runner.startTransaction();
    try {
      const claimed = (
        (await runner.query(CLAIM_TASKS, [ids, new Date(nowMs)], true)).records as TaskRow[]
      ).sort((a, b) => a.due_at.getTime() - b.due_at.getTime() || Number(a.id) - Number(b.id));
      const outcomes = fenced
        ? await this.runFenced(runner, claimed, nowMs)
        : await this.runOptimistic(runner, claimed, nowMs);
      if (outcomes === REDO) {
        await runner.rollbackTransaction();
        return REDO;
      }
      await runner.commitTransaction();
      return { claimedIds: new Set(claimed.map((row) => Number(row.id))), outcomes, rerun: false };
    } catch (error) {
      if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
      throw error;
    }
  }

  private async runOptimistic(
    runner: QueryRunner,
    claimed: TaskRow[],
    nowMs: number,
  ): Promise<Outcome[] | typeof REDO> {
    const outcomes: Outcome[] = [];
    for (const row of claimed) {
      const handler = this.registry.get(row.type);
      if (!handler) {
        outcomes.push(await this.deadLetterUnknown(runner, row, nowMs));
        continue;
      }
      try {
        await handler(row.payload, {
          task: toTask(row),
          manager: runner.manager,
          instanceId: this.options.instanceId,
        });
      } catch {
        return REDO;
      }
      outcomes.push('executed');
    }
    // A handler may have swallowed a database error; COMMIT would then quietly
    // roll everything back. A statement that fails on an aborted transaction tells.
    try {
      await runner.query('SELECT 1');
    } catch {
      return REDO;
    }
    return outcomes;
  }

  private async runFenced(
    runner: QueryRunner,
    claimed: TaskRow[],
    nowMs: number,
  ): Promise<Outcome[]> {
    const outcomes: Outcome[] = [];
    for (const [index, row] of claimed.entries()) {
      // One round trip per fence: the previous task's savepoint is released
      // and this one's taken in one simple-protocol query.
      if (index === 0) await runner.query('SAVEPOINT delayed_task');
      else
        await this.fence(
          runner,
          claimed[index - 1],
          outcomes,
          nowMs,
          'RELEASE SAVEPOINT delayed_task; SAVEPOINT delayed_task',
        );
      outcomes.push(await this.runOne(runner, row, nowMs));
    }
    // A separate release for the last task: COMMIT on a transaction that a
    // handler left aborted would quietly roll back the whole batch.
    if (claimed.length > 0) {
      await this.fence(
        runner,
        claimed[claimed.length - 1],
        outcomes,
        nowMs,
        'RELEASE SAVEPOINT delayed_task',
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
    runner: QueryRunner,
    previous: TaskRow,
    outcomes: Outcome[],
    nowMs: number,
    sql: string,
  ) {
    try {
      await runner.query(sql);
    } catch (error) {
      await runner.query('ROLLBACK TO SAVEPOINT delayed_task');
      const failure = new Error(
        `handler returned but left its transaction aborted (${errorText(error)})`,
      );
      outcomes[outcomes.length - 1] = await this.recordFailure(runner, previous, failure, nowMs);
      await runner.query(sql);
    }
  }

  /** One task, after its savepoint was taken. */
  private async runOne(runner: QueryRunner, row: TaskRow, nowMs: number): Promise<Outcome> {
    const handler = this.registry.get(row.type);
    if (!handler) return this.deadLetterUnknown(runner, row, nowMs);
    try {
      await handler(row.payload, {
        task: toTask(row),
        manager: runner.manager,
        instanceId: this.options.instanceId,
      });
      return 'executed';
    } catch (error) {
      await runner.query('ROLLBACK TO SAVEPOINT delayed_task');
      return this.recordFailure(runner, row, error, nowMs);
    }
  }

  private async deadLetterUnknown(
    runner: QueryRunner,
    row: TaskRow,
    nowMs: number,
  ): Promise<Outcome> {
    const message = noHandlerAtRun(row.type);
    await runner.query(DEAD_LETTER_TASK, [row.id, message, new Date(nowMs)]);
    this.logger.error(`Task ${row.id} (${row.type}): ${message}`);
    return 'dead';
  }

  /** Inside the savepoint, after its rollback: retry later with backoff, or dead-letter. */
  private async recordFailure(
    runner: QueryRunner,
    row: TaskRow,
    error: unknown,
    nowMs: number,
  ): Promise<Outcome> {
    const now = new Date(nowMs);
    const message = errorText(error);
    if (row.attempts >= row.max_attempts) {
      await runner.query(DEAD_LETTER_TASK, [row.id, message, now]);
      this.logger.error(
        `Task ${row.id} (${row.type}) dead-lettered after ${row.attempts} attempt(s): ${message}`,
      );
      return 'dead';
    }
    const dueAtMs = nowMs + retryDelayMs(this.options, row.attempts);
    // A retry beyond the window is left for whichever instance loads it then.
    const held = dueAtMs < nowMs + this.options.windowMs;
    await runner.query(RETRY_TASK_LATER, [
      row.id,
      message,
      new Date(dueAtMs),
      now,
      held ? this.options.instanceId : null,
    ]);
    this.logger.warn(
      `Task ${row.id} (${row.type}) failed attempt ${row.attempts}/${row.max_attempts}, retrying at ${new Date(dueAtMs).toISOString()}: ${message}`,
    );
    return { id: Number(row.id), dueAtMs, held };
  }
}
