import { currentTask } from '../observer/task-scope.js';
import type { QueryGate } from '../store/sql.js';
import { Leads } from './lead-time.js';

/**
 * The gate of a claim whose handlers run one after another: it holds
 * nothing back, and notes each handler's lead (lead-time.ts).
 */
export class LeadWatch implements QueryGate {
  readonly leads = new Leads();

  pass<T>(send: () => Promise<T>): Promise<T> {
    const id = currentTask()?.id;
    if (id !== undefined) this.leads.statement(id);
    return send();
  }
}
