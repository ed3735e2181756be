import type { Fate } from '../tasks/task-transitions.js';
import type { TaskId } from '../task.types.js';
import type { Claimed, PassedRow } from './claim-statements.js';
import type { ClaimRow } from '../tasks/task-row.js';
import type { GatedRow, LineRefusal } from '../limits/gate-line.types.js';
import type { LineGating } from './line-claims.js';

/* What a claim transaction (ClaimBatch) is asked to do, and what it comes to. */

export interface BatchResult {
  claimedIds: Set<TaskId>;
  /** Due tasks of limited or paused types, unclaimed: they wait in the limit gate. */
  gated: GatedRow[];
  /** Why a gate's claim stopped short: its type paused, its seats held elsewhere, no credit for a rate. */
  refused: LineRefusal | null;
  /** A gate's claim: tasks it did not try (it stopped short, or ran its time): back to their line. */
  left: TaskId[];
  /** Due tasks left unclaimed because they may only run alone: each gets a claim of its own. */
  deferred: TaskId[];
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
  /** Limited types, in a claim of fired tasks: handed to the gate. */
  declared: string[];
  /** The types this instance has handlers for: no other is claimed (WindowPolicy.handles). */
  handled: readonly string[];
  /** A gate's claim: its line's tasks claimed in one statement under their limits, started one at a time (LineClaims). */
  line?: LineGating;
  /** Run with savepoints from the start (a savepoint a task), never optimistically then again. */
  savepoints?: boolean;
  /** Called once a handler has started (its synchronous part ran): a rate credit is stamped then. */
  onStart?: (row: ClaimRow) => void;
}
