import { currentTask } from '../observer/task-scope.js';
import type { QueryGate } from '../store/sql.js';
import type { TaskId } from '../task.types.js';

/**
 * The gate of a claim whose handlers run one after another: it holds
 * nothing back, and notes how long the running handler ran before its first
 * statement (its lead, for the OverlapGauge).
 */
export class LeadWatch implements QueryGate {
  private id: TaskId | undefined;
  private startedAt = 0;
  private leadMs: number | undefined;

  /** The attempt of `id` starts now. */
  started(id: TaskId): void {
    this.id = id;
    this.startedAt = performance.now();
    this.leadMs = undefined;
  }

  /** How long the running handler ran before its first statement; undefined if it sent none. */
  get lead(): number | undefined {
    return this.leadMs;
  }

  pass<T>(send: () => Promise<T>): Promise<T> {
    if (this.leadMs === undefined && this.id !== undefined && currentTask()?.id === this.id)
      this.leadMs = performance.now() - this.startedAt;
    return send();
  }
}
