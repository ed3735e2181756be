import type { DelayedTask, TaskId, TaskState } from '../task.types.js';
import type { WheelCensus } from '../wheel/index.js';

/** Which tasks to list: every field narrows, none means all. Due times: from inclusive, before exclusive. */
export interface TaskListFilter {
  state?: TaskState;
  type?: string;
  key?: string;
  keyPrefix?: string;
  /** Tasks of this entity (`order:42`), exactly. */
  entity?: string;
  dueFrom?: Date;
  dueBefore?: Date;
}

/** One page of a listing; `nextCursor` is null on the last page. */
export interface TaskPage {
  items: DelayedTask[];
  nextCursor: string | null;
}

/** An instance as its lease row says, seen from the instance asking. */
export interface InstanceInfo {
  id: string;
  startedAt: Date;
  heartbeatAt: Date;
  leaseUntil: Date;
  /** Its lease still runs by the asking instance's clock. */
  live: boolean;
  /** The instance asking. */
  self: boolean;
  /** Pending tasks leased to it (at most the cap, then `heldCapped`). */
  held: number;
  heldCapped: boolean;
  /**
   * The clock it runs on minus the database's at its last heartbeat (off by
   * at most the statement's one-way latency): within a round trip when its
   * clock is corrected; null before its first beat since the upgrade.
   */
  clockOffsetMs: number | null;
  /**
   * Its host's system clock minus the database's, as its heartbeats measure
   * it: what it corrects (see DatabaseClock). Null on a clock of its own (a
   * test's ManualClock) or before its first beat since the upgrade.
   */
  systemClockOffsetMs: number | null;
}

/** A task and who holds it. */
export interface TaskDetails {
  task: DelayedTask;
  /** The instance whose lease holds it (locked_by), or null when nobody does. */
  holder: InstanceInfo | null;
  /** In this instance's wheel right now. */
  inThisWheel: boolean;
}

/** What a bulk revive of dead-lettered tasks did. */
export interface ReviveDeadResult {
  /** Tasks put back to pending, oldest due first. */
  revived: TaskId[];
  /** Tasks matched but revived by someone else in between (no longer dead). */
  skipped: number;
  /** More dead tasks match than the limit allowed: call again. */
  more: boolean;
}

/** @deprecated Since 0.3: see {@link ReviveDeadResult} (`retried` is its `revived`). */
export interface RetryDeadResult {
  retried: TaskId[];
  skipped: number;
  more: boolean;
}

/** This instance's wheel, with times as epoch ms (see wheelCensus). */
export interface WheelSnapshot extends WheelCensus {
  instanceId: string;
  nowMs: number;
  windowMs: number;
}
