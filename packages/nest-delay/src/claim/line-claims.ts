import { pauseWaitingProbe } from '../limits/limit-statements.js';
import { GATE_CLAIM_MAX_MS } from '../context/tuning.js';
import type { Sql } from '../store/sql.js';
import type { TaskId } from '../task.types.js';
import type { ClaimRow } from '../tasks/task-row.js';
import type { LineRefusal } from '../limits/gate-line.types.js';

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

/**
 * Undoes the claim of tasks a gate's claim took but did not start (it ran
 * its time, or a pause is waiting): pending again, their attempt not
 * counted, and the attempt the claim recorded on their timeline gone, in the
 * claim's own transaction, so what commits is as if they had never been
 * claimed (but for `updated_at`). Only a batch stops short, and a
 * batch claims no task flagged as cut off, so there is no flag to restore.
 */
export async function returnUnstarted(sql: Sql, ids: TaskId[], claimedAt: Date): Promise<void> {
  await sql.rows(
    `WITH unstarted AS (
       UPDATE delayed_task SET executed_at = NULL, attempts = attempts - 1
       WHERE id = ANY($1::bigint[]) AND executed_at = $2
       RETURNING id, entity, attempts + 1 AS attempt
     )
     -- [timeline] the claim recorded their attempts as started: they were not.
     -- By entity and task, as the history's index is.
     DELETE FROM delay_task_event e USING unstarted u
     WHERE e.entity = u.entity AND e.task_id = u.id
       AND e.event = 'started' AND e.attempt = u.attempt AND e.at = $2`,
    [ids, claimedAt],
  );
}

/** Deletes a claim's own note in its transaction, when it claims nothing (a refused gate's claim). */
export async function deleteNote(sql: Sql, noteId: string): Promise<void> {
  await sql.rows(`DELETE FROM delay_attempt WHERE id = $1`, [noteId]);
}
