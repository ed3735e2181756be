import type { TaskId } from '../task.types.js';
import type { ResolvedLimit } from '../task-limit.js';

/**
 * Why the database refused a gate's claim: paused (or a pause committing),
 * every seat held elsewhere, or a rate in force with no credit held (a stale
 * picture of the limits, or credits reaped by a takeover).
 */
export type LineRefusal = 'paused' | 'busy' | 'unpaced';

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
  lastClaim: number;
  /** A claim of it is taking rate credits: the next waits, so credits go in due order. */
  takingCredit: boolean;
  /** Its last take found every credit in flight: the next stamp or put-back says when to ask again. */
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

/** Tasks of one line, in due order, for one claim: one seat, a rate credit a start. */
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

/** One type's limits as this instance last knew them. */
export interface TypeLimits {
  /** What its handlers declare: as the last instance to boot stored it, else this instance's code. */
  declared: ResolvedLimit;
  /** What was set at run time in its place, if anything. */
  override: ResolvedLimit | null;
  /** In force: the override, else the declared. */
  effective: ResolvedLimit;
  pausedAt: Date | null;
}
