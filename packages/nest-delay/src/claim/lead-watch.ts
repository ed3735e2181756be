import { currentTask } from '../observer/task-scope.js';
import type { QueryGate } from '../store/sql.js';
import type { TaskId } from '../task.types.js';
import { leadSince, leadStart, type LeadStart } from './lead-time.js';

/**
 * The gate of a claim whose handlers run one after another: it holds
 * nothing back, and notes the running handler's lead (lead-time.ts).
 */
export class LeadWatch implements QueryGate {
  private id: TaskId | undefined;
  private start: LeadStart | undefined;
  private leadMs: number | undefined;

  /** The attempt of `id` starts now. */
  started(id: TaskId): void {
    this.id = id;
    this.start = leadStart();
    this.leadMs = undefined;
  }

  /** The running handler's lead (lead-time.ts): to its first statement, or to now if it sent none. */
  get lead(): number {
    return this.leadMs ?? leadSince(this.start!);
  }

  pass<T>(send: () => Promise<T>): Promise<T> {
    if (this.leadMs === undefined && this.id !== undefined && currentTask()?.id === this.id)
      this.leadMs = leadSince(this.start!);
    return send();
  }
}
