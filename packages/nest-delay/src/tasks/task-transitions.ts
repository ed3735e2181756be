import { retryDelayMs, type Backoff } from '../delay.options.js';
import type { NormalizedRequest } from './schedule-request.js';
import type { WindowPolicy } from './window-policy.js';
import type { TaskRow } from './task-row.js';

/**
 * Every change of a `delayed_task` row, decided here and nowhere else: pure
 * decisions (row, time and window policy in; new state, `locked_by`
 * included, out), each written by one statement in the *-statements.ts
 * files. Invariants: `interrupted_at` (the last attempt was cut off: run
 * alone) is set by a charge and cleared only by the claim; `attempts` counts
 * the attempts started, the current one included.
 */

/** What the decisions need beyond the row and the time. */
export interface TransitionRules {
  readonly policy: WindowPolicy;
  /** The backoff between attempts of a type (its handler's, else the module's). */
  backoffOf(type: string): Backoff;
}

/** After `attempts` attempts were spent, may the task have another? */
export function hasAttemptsLeft(row: Pick<TaskRow, 'attempts' | 'max_attempts'>): boolean {
  return row.attempts < row.max_attempts;
}

// ---------------------------------------------------------------- the claim's outcomes

/** The end of one claimed attempt: what the claim transaction commits for the task. */
export type Fate = Complete | Retry | Snooze | Discard | Exhaust | Skip;

interface FateOf {
  /** The row as claimed (this attempt counted). */
  readonly row: TaskRow;
}

/** The handler returned: the claim's `executed_at` commits with its effects. Writes nothing. */
export interface Complete extends FateOf {
  readonly transition: 'complete';
}

/** Pending again at `dueAtMs`, after a failed or cut-off attempt with attempts left. */
export interface Retry extends FateOf {
  readonly transition: 'retry';
  readonly dueAtMs: number;
  readonly lockedBy: string | null;
  readonly error: string;
  /** The thrown error's stack, for the log only (last_error keeps the message). */
  readonly stack?: string;
}

/** Pending again at `dueAtMs`, as the handler asked, its attempt given back. */
export interface Snooze extends FateOf {
  readonly transition: 'snooze';
  readonly dueAtMs: number;
  readonly lockedBy: string | null;
  readonly attempts: number;
}

/** Dead-lettered at the handler's word (or because nobody can run it): retrying cannot help. */
export interface Discard extends FateOf {
  readonly transition: 'discard';
  readonly reason: string;
}

/** Dead-lettered: its last attempt failed or was cut off. */
export interface Exhaust extends FateOf {
  readonly transition: 'exhaust';
  readonly reason: string;
  readonly attempts: number;
  /** The thrown error's stack, for the log only. */
  readonly stack?: string;
}

/** An occurrence (overlap 'skip') due while an earlier one is retrying: cancelled without running. */
export interface Skip extends FateOf {
  readonly transition: 'skip';
  readonly reason: string;
}

export function skip(row: TaskRow, reason: string): Skip {
  return { transition: 'skip', row, reason };
}

export function complete(row: TaskRow): Complete {
  return { transition: 'complete', row };
}

/** The handler threw (or left its transaction aborted): retry with backoff, or exhaust. */
export function fail(
  row: TaskRow,
  error: string,
  nowMs: number,
  rules: TransitionRules,
  stack?: string,
): Retry | Exhaust {
  if (!hasAttemptsLeft(row)) {
    return { transition: 'exhaust', row, reason: error, attempts: row.attempts, stack };
  }
  const dueAtMs = nowMs + retryDelayMs(rules.backoffOf(row.type), row.attempts);
  return {
    transition: 'retry',
    row,
    dueAtMs,
    lockedBy: rules.policy.leaseOnWrite(dueAtMs, nowMs),
    error,
    stack,
  };
}

export function snooze(
  row: TaskRow,
  snoozeMs: number,
  nowMs: number,
  policy: WindowPolicy,
): Snooze {
  const dueAtMs = nowMs + snoozeMs;
  return {
    transition: 'snooze',
    row,
    dueAtMs,
    lockedBy: policy.leaseOnWrite(dueAtMs, nowMs),
    // Snoozing never spends an attempt, so it never dead-letters a task.
    attempts: row.attempts - 1,
  };
}

export function discard(row: TaskRow, reason: string): Discard {
  return { transition: 'discard', row, reason };
}

// ---------------------------------------------------------------- charges

/** Cut-off attempts charged to a task; pending again (`retry`) or out of attempts (`exhaust`). */
export type Charge = (Retry | Exhaust) & {
  /** Attempts after the charge. */
  readonly attempts: number;
  /** Cut-off attempts charged. */
  readonly times: number;
};

/**
 * Charges `times` cut-off attempts (their claims rolled back with their
 * count) to `row` as it is now: exhausted, or pending at `retryAtMs` flagged
 * to run alone, so if it kills its process again no batch-mate is charged.
 */
export function charge(
  row: TaskRow,
  times: number,
  reason: string,
  retryAtMs: number,
  nowMs: number,
  policy: WindowPolicy,
): Charge {
  const attempts = row.attempts + times;
  if (!hasAttemptsLeft({ attempts, max_attempts: row.max_attempts })) {
    const last = `${reason}; out of attempts, dead-lettered without running it again`;
    return { transition: 'exhaust', row, reason: last, attempts, times };
  }
  return {
    transition: 'retry',
    row,
    dueAtMs: retryAtMs,
    lockedBy: policy.leaseOnWrite(retryAtMs, nowMs),
    error: reason,
    attempts,
    times,
  };
}

/** The last error of a task charged by an orphaned attempt note. */
export function noteChargeReason(attempt: number, instanceId: string): string {
  return `attempt ${attempt} was cut off: instance ${instanceId} stopped or died while running it`;
}

// ---------------------------------------------------------------- a keyed schedule

/** **replace**: the pending task holding the key becomes the request, attempts 0, no last error; leased as a new task would be. */
export interface ReplaceAction {
  readonly transition: 'replace';
  readonly dueAtMs: number;
  readonly lockedBy: string | null;
  readonly attempts: 0;
}

export function replace(
  dueAtMs: number,
  nowMs: number,
  policy: WindowPolicy,
  inCallerTransaction: boolean,
  type?: string,
): ReplaceAction {
  return {
    transition: 'replace',
    dueAtMs,
    lockedBy: policy.leaseOnWrite(dueAtMs, nowMs, inCallerTransaction, type),
    attempts: 0,
  };
}

/**
 * **debounce**: as a replace, due at the request's time but never past
 * `maxWaitMs` after the task's `created_at`. The statement computes the time
 * and lease from the row as locked, so it holds whatever races it.
 */
export interface DebounceAction {
  readonly transition: 'debounce';
  readonly maxWaitMs: number;
  readonly lockedBy: string | null;
  readonly horizonMs: number;
  readonly attempts: 0;
}

export function debounce(
  maxWaitMs: number,
  nowMs: number,
  policy: WindowPolicy,
  inCallerTransaction: boolean,
  type?: string,
): DebounceAction {
  return {
    transition: 'debounce',
    maxWaitMs,
    lockedBy: policy.leaseOnWrite(nowMs, nowMs, inCallerTransaction, type),
    horizonMs: policy.horizonMs(nowMs),
    attempts: 0,
  };
}

/** What a keyed schedule does to the pending task already holding its key: `keep` it, replace or debounce. */
export function keyAction(
  req: NormalizedRequest,
  nowMs: number,
  policy: WindowPolicy,
  inCaller: boolean,
): ReplaceAction | DebounceAction | 'keep' {
  switch (req.ifExists) {
    case 'keep':
      return 'keep';
    case 'replace':
      return replace(req.dueAtMs, nowMs, policy, inCaller, req.type);
    case 'debounce':
      return debounce(req.maxWaitMs as number, nowMs, policy, inCaller, req.type);
  }
}

// ---------------------------------------------------------------- the service's actions

/** A change by ref; its statement checks the state it fits (pending; dead for a revive) as it writes, so no check goes stale. */
export interface CancelAction {
  readonly transition: 'cancel';
  readonly lockedBy: null;
}

export interface MoveAction {
  readonly transition: 'reschedule' | 'revive';
  readonly dueAtMs: number;
  /** Who leases it if its type is among `handledTypes` (the statement reads the type); else nobody. */
  readonly lockedBy: string | null;
  readonly handledTypes: readonly string[];
}

export function cancel(): CancelAction {
  return { transition: 'cancel', lockedBy: null };
}

export function reschedule(
  dueAtMs: number,
  nowMs: number,
  policy: WindowPolicy,
  inCallerTransaction: boolean,
): MoveAction {
  return {
    transition: 'reschedule',
    dueAtMs,
    lockedBy: policy.leaseOnWrite(dueAtMs, nowMs, inCallerTransaction),
    handledTypes: policy.handledTypes,
  };
}

/** A dead-lettered task back to pending, due now, with fresh attempts. */
export function revive(
  nowMs: number,
  policy: WindowPolicy,
  inCallerTransaction: boolean,
): MoveAction {
  return {
    transition: 'revive',
    dueAtMs: nowMs,
    lockedBy: policy.leaseOnWrite(nowMs, nowMs, inCallerTransaction),
    handledTypes: policy.handledTypes,
  };
}

// ---------------------------------------------------------------- an entity's tasks

/** **cancel-entity**: every pending task of an entity (of the given types); a running one is waited for (entity-statements.ts). */
export interface CancelEntityAction {
  readonly transition: 'cancel-entity';
  readonly lockedBy: null;
}

export function cancelEntity(): CancelEntityAction {
  return { transition: 'cancel-entity', lockedBy: null };
}

/** **reschedule-entity**: each moves by `byMs` from its own due time, or to `toMs`; leased to `lockedBy` if then before `horizonMs`. */
export interface RescheduleEntityAction {
  readonly transition: 'reschedule-entity';
  readonly byMs: number | null;
  readonly toMs: number | null;
  readonly lockedBy: string | null;
  readonly horizonMs: number;
  /** Only tasks of these types are leased (an entity's tasks may be of any service's types). */
  readonly handledTypes: readonly string[];
}

export function rescheduleEntity(
  move: { byMs?: number; toMs?: number },
  nowMs: number,
  policy: WindowPolicy,
  inCallerTransaction: boolean,
): RescheduleEntityAction {
  return {
    transition: 'reschedule-entity',
    byMs: move.byMs ?? null,
    toMs: move.toMs ?? null,
    // Whoever holds a task due now holds any task due within the window.
    lockedBy: policy.leaseOnWrite(nowMs, nowMs, inCallerTransaction),
    horizonMs: policy.horizonMs(nowMs),
    handledTypes: policy.handledTypes,
  };
}

// ---------------------------------------------------------------- a schedule's occurrences

/**
 * **unplan** deletes occurrences planned ahead rather than cancel them, so
 * replanning may insert those instants again (the unique index allows one
 * task per occurrence, ever). **withdraw** cancels one at its claim, with
 * one of these reasons (claim/claim-statements.ts).
 */
export const WITHDRAWN = {
  removed: 'withdrawn: its schedule was removed',
  paused: 'withdrawn: its schedule is paused',
  ruleChanged: "withdrawn: its schedule's rule changed after it was planned",
  /** Prefix of a catch-up drop; the policy follows it. */
  missed: 'missed: due while no instance ran, dropped by its catch-up policy',
} as const;
