import { pauseWaitingProbe } from '../limits/limit-statements.js';
import { GATE_CLAIM_MAX_MS } from '../context/tuning.js';
import type { Sql } from '../store/sql.js';
import type { TaskId } from '../task.types.js';
import { returnUnstarted } from './claim-statements.js';
import type { ClaimRow } from '../tasks/task-row.js';
import type { LineRefusal } from '../limits/gate-lines.js';

/** The line a gate's claim is for, and what its line check (sent with the BEGIN) answered. */
export interface LineGating {
  type: string;
  /** Null: the line may claim (lineCheckInScript). */
  refused: LineRefusal | null;
}

/**
 * A gate's claim of one line's tasks, started one at a time in due order
 * under the line check's locks (held to the claim's end). It stops when a
 * pause() waits (pauseWaitingProbe, before each start after the first) or
 * after GATE_CLAIM_MAX_MS, and puts back the tasks not started: a pause
 * waits for one handler, a transaction outlives a second by one handler's run.
 */
export class LineRun {
  private index = 0;
  private readonly beganMs = performance.now();
  /** The savepoint step's question before each start after the first: may it go on (no pause waiting)? */
  readonly probe: string;

  constructor(
    private readonly sql: Sql,
    /** Claimed, in due order. */
    private readonly claimed: ClaimRow[],
    private readonly claimedAt: Date,
    typeLiteral: string,
  ) {
    this.probe = pauseWaitingProbe(typeLiteral);
  }

  /** The next task to start, or undefined once the claim has run its time. */
  next(): ClaimRow | undefined {
    if (this.index > 0 && performance.now() - this.beganMs > GATE_CLAIM_MAX_MS) return undefined;
    return this.claimed[this.index++];
  }

  /** The savepoint step's probe said stop before `row` started: it and those after it go back. */
  stopBefore(row: ClaimRow): void {
    this.index = this.claimed.indexOf(row);
  }

  /** The tasks that started. */
  get started(): ClaimRow[] {
    return this.claimed.slice(0, this.index);
  }

  /** Puts back the tasks not started, in the claim's transaction (outside any savepoint); returns their ids. */
  async putBack(): Promise<TaskId[]> {
    const unstarted = this.claimed.slice(this.index).map((row) => row.id);
    if (unstarted.length > 0) await returnUnstarted(this.sql, unstarted, this.claimedAt);
    return unstarted;
  }
}
