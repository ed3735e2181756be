import { pauseWaitingProbe } from '../limits/limit-statements.js';
import { GATE_CLAIM_MAX_MS } from '../context/tuning.js';
import type { Sql } from '../store/sql.js';
import { compareIds } from '../task-ref.js';
import type { TaskId } from '../task.types.js';
import { claimTasks, returnUnstarted, type PassedRow } from './claim-statements.js';
import type { ClaimRow } from '../tasks/task-row.js';
import type { LineRefusal } from '../limits/gate-line.types.js';

/** The line a gate's claim is for, as its claim statement needs it. */
export interface LineGating {
  type: string;
  key: string;
  /** Declared concurrency (a run-time override in the table decides otherwise). */
  concurrency: number | null;
  /** The declared limits include a rate. */
  paced: boolean;
  /** Rate credits taken for its starts, one a task: the claim checks this instance still holds them all. */
  credits?: { holder: string; taken: number[] };
}

/**
 * A gate's claim of one line's tasks: one claim statement takes them all
 * (the database decides, in it, whether the type is paused, takes the
 * line's concurrency seat, and checks the rate credits are still this
 * instance's), and hands them to the savepoint pass one at a time, in due order.
 *
 * What holds between the starts, without a claim statement each: the claim
 * holds the type's pause lock shared and its instance's lease row locked to
 * its end, so no pause commits and no takeover reaps its credits while it
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
  private index = 0;
  private readonly beganMs = performance.now();
  /** The savepoint step's question before each start after the first: may it go on (no pause waiting)? */
  readonly probe: string;

  constructor(
    private readonly sql: Sql,
    private readonly ids: TaskId[],
    private readonly claim: { now: Date; noteId: string; alone: boolean; overdueAfterMs: number },
    private readonly line: LineGating,
    literal: (value: string) => string,
  ) {
    this.probe = pauseWaitingProbe(literal(line.type));
  }

  /** The one claim statement. */
  async take(): Promise<void> {
    const { line, claim } = this;
    const result = await claimTasks(
      this.sql,
      this.ids,
      claim.now,
      claim.noteId,
      claim.alone,
      {
        line: {
          type: line.type,
          key: line.key,
          concurrency: line.concurrency,
          paced: line.paced,
          credits: line.credits && { credits: line.credits.taken, holder: line.credits.holder },
        },
      },
      claim.overdueAfterMs,
    );
    if (result.refused) {
      this.refused = result.refused;
      this.left = [...this.ids];
      return;
    }
    this.deferred = result.deferred;
    this.passed = result.passed;
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
