import { pauseWaitingProbe } from '../limits/limit-statements.js';
import { GATE_CLAIM_MAX_MS } from '../context/tuning.js';
import type { Sql } from '../store/sql.js';
import { compareIds } from '../task-ref.js';
import type { TaskId } from '../task.types.js';
import { claimTasks, returnUnstarted, type PassedRow } from './claim-statements.js';
import { deleteNote } from './attempt-statements.js';
import type { ClaimRow } from '../tasks/task-row.js';
import type { LineRefusal } from '../limits/gate-line.types.js';

/** The line a gate's claim is for, and what its line check (sent with the BEGIN) answered. */
export interface LineGating {
  type: string;
  /** Null: the line may claim (lineCheckInScript). */
  refused: LineRefusal | null;
}

/**
 * A gate's claim of one line's tasks. Its line check, sent with its BEGIN
 * (lineCheckInScript), decided in the database whether the type is paused,
 * took the line's concurrency seat and checked the rate credits are still
 * this instance's; then the one claim statement takes them all, cleared for
 * the line's type, and they go to the savepoint pass one at a time, in due
 * order. So a limited task is claimed once, by its line.
 *
 * What holds between the starts, without a check each: the claim holds the
 * type's pause lock shared, its seat, and its instance's lease row locked
 * to its end, so no pause commits and no takeover reaps its credits while it
 * runs. Before each start after the first, the savepoint step's round trip also asks
 * whether a pause() is waiting (pauseWaitingProbe): then, as once it has run
 * GATE_CLAIM_MAX_MS, it starts no more, and the tasks not started are put
 * back as they were (returnUnstarted) and go back to their line (`left`).
 * So a pause waits for one handler, and no transaction outlives a second by
 * more than one handler's run.
 */
export class LineClaims {
  /** Claimed by the statement, in due order. */
  private claimed: ClaimRow[] = [];
  deferred: TaskId[] = [];
  refused: LineRefusal | null = null;
  /** Not started: refused, or the claim stopped before them. Back to their line. */
  left: TaskId[] = [];
  /** Ids it could not lock, still pending (see PassedRow). */
  passed: PassedRow[] = [];
  /** Due, of a type with no handler here: left to an instance that has one. */
  unhandled: TaskId[] = [];
  /** Of another limited type than the line's (a replace changed it): to the gate. */
  gated: TaskId[] = [];
  private index = 0;
  private readonly beganMs = performance.now();
  /** The savepoint step's question before each start after the first: may it go on (no pause waiting)? */
  readonly probe: string;

  constructor(
    private readonly sql: Sql,
    private readonly ids: TaskId[],
    private readonly claim: {
      now: Date;
      noteId: string;
      alone: boolean;
      overdueAfterMs: number;
      handled: readonly string[];
    },
    private readonly line: LineGating,
    literal: (value: string) => string,
  ) {
    this.probe = pauseWaitingProbe(literal(line.type));
  }

  /** The one claim statement, unless the line check refused (then only the note goes). */
  async take(): Promise<void> {
    const { line, claim } = this;
    if (line.refused) {
      await deleteNote(this.sql, claim.noteId);
      this.refused = line.refused;
      this.left = [...this.ids];
      return;
    }
    const result = await claimTasks(
      this.sql,
      this.ids,
      claim.now,
      claim.noteId,
      claim.alone,
      line.type,
      claim.overdueAfterMs,
      claim.handled,
    );
    this.deferred = result.deferred;
    this.gated = result.gated;
    this.passed = result.passed;
    this.unhandled = result.unhandled;
    this.claimed = result.claimed.sort(
      (a, b) => a.due_at.getTime() - b.due_at.getTime() || compareIds(a.id, b.id),
    );
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

  /**
   * Puts back the claimed tasks that did not start, in the claim's
   * transaction (outside any task's savepoint), so they commit unchanged.
   */
  async putBack(): Promise<void> {
    const unstarted = this.claimed.slice(this.index).map((row) => row.id);
    if (unstarted.length === 0) return;
    await returnUnstarted(this.sql, unstarted, this.claim.now);
    this.left.push(...unstarted);
  }
}
