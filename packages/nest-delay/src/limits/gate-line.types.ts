import type { TaskId } from '../task.types.js';
import type { ResolvedLimit } from '../task-limit.js';

/** A due task of a limited (or paused) type, for its line in the limit gate. */
export interface GatedRow {
  id: TaskId;
  type: string;
  payload: unknown;
  dueAtMs: number;
}

/**
 * Why a gate's claim of a task was refused, decided by the database in the
 * claim statement: the type is paused (or a pause is being committed),
 * its concurrency seats are all held elsewhere, or a rate is in force and
 * the claim holds no credit for it (its instance's picture of the limits was
 * stale, or its credits were reaped by a takeover).
 */
export type LineRefusal = 'paused' | 'busy' | 'unpaced';

/**
 * The shapes of the limit gate's lines (GateLines): a task waiting, a line,
 * a claim the gate asks for, and what it came to.
 */

/** One task waiting behind its line's limit. */
export interface GateItem {
  id: TaskId;
  dueAtMs: number;
  /** When it came to the gate: its wait for the limit counts from here. */
  sinceMs: number;
  /** Its last attempt was cut off: its claim must run alone. */
  alone: boolean;
}

/** A type and key with limits of their own: its tasks wait here in due order. */
export interface Line {
  readonly type: string;
  readonly key: string;
  readonly waiting: GateItem[];
  /** Its claims in flight on this instance. */
  running: number;
  /** Not before this (a rate credit frees, or a look again after a busy seat). */
  readyAtMs: number;
  /** Why it last could not start: a seat held elsewhere is looked at before trying again. */
  blocked: 'busy' | 'rate' | null;
  backoffMs: number;
  /** When it last started a claim (a count): among heads due together, the line that waited longest goes first. */
  turn: number;
  /**
   * A claim of it is taking a rate credit: the next waits, so credits go in
   * due order rather than to whichever claim reaches the database first.
   */
  takingCredit: boolean;
  /**
   * Its last take found every credit in flight (taken by claims not yet
   * started or stamped): the next stamp or put-back, not a clock, says when to ask again.
   */
  creditsInFlight: boolean;
  /** Counts its credits put back here: a take that raced one may have skipped it (locked). */
  putBacks: number;
  /** Counts its credits stamped here: a take that found all in flight may have missed one. */
  stamps: number;
}

/** What one gate claim came to, for its line. */
export type GateOutcome =
  | { kind: 'ran' }
  /** Nothing to learn: its tasks were gone, or the claim failed as a whole (the dispatcher holds them). */
  | { kind: 'done' }
  /** Its line's seats are all held elsewhere. */
  | { kind: 'busy' }
  | { kind: 'paused' }
  /** Fewer credits than tasks: the next frees at `nextFreeMs` (null: unknown). */
  | { kind: 'rate'; nextFreeMs: number | null }
  /** The database found a rate in force that this instance's picture lacked: read the limits again. */
  | { kind: 'stale' };

/**
 * A claim the gate asks for: tasks of one line, in due order, under the
 * limits in force. They run one after another in one transaction, which
 * holds one concurrency seat and a rate credit for each start.
 */
export interface GateClaim {
  line: Line;
  items: GateItem[];
  /** The handler's declared limits: the claim's SQL prefers a run-time override. */
  declared: ResolvedLimit;
  /** In force as this instance knows them (the rate decides whether a credit is taken). */
  effective: ResolvedLimit;
  /** The line's put-backs and stamps when its take began. */
  creditsAtTake: { putBacks: number; stamps: number };
}

/** How LimitGate sizes and paces the lines. */
export interface GateLinesConfig {
  /** Most tasks in one claim. */
  batchSize: number;
  /** A line with no concurrency limit is spread over this many claims at once. */
  spread: number;
  /** Most tasks waiting in all lines: beyond it, add() sheds them. */
  capacity: number;
  firstBackoffMs: number;
  maxBackoffMs: number;
}
