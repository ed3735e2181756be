import type { ObserverCalls } from '../observer/observer-calls.js';
import type { Fate } from '../tasks/task-transitions.js';
import type { BatchResult } from './claim-batch.js';

const HOOK = {
  complete: 'onExecuted',
  retry: 'onFailed',
  discard: 'onDeadLettered',
  exhaust: 'onDeadLettered',
  snooze: 'onSnoozed',
  skip: 'onCancelled',
} as const satisfies Record<Fate['transition'], string>;

/**
 * Tells the observer what one committed claim did: each task's fate, then
 * the claim itself. Lateness is measured against the claim's time, the
 * `executed_at` the table records. Nothing is built for a hook nobody has.
 */
export function reportBatch(
  observer: ObserverCalls,
  result: BatchResult,
  requested: number,
  claimMs: number,
  durationMs: number,
  /** A gate's claim: how long each task waited behind its limit. */
  limitWaits?: Map<string, number>,
): void {
  for (const fate of result.fates)
    reportFate(observer, fate, claimMs, limitWaits?.get(fate.row.id) ?? 0);
  if (observer.wants('onClaim')) {
    observer.emit('onClaim', { requested, claimed: result.claimedIds.size, durationMs });
  }
}

/** `limitWaitMs`: how long it waited behind a shared limit or a pause, kept out of its lateness. */
export function reportFate(
  observer: ObserverCalls,
  fate: Fate,
  claimMs: number,
  limitWaitMs = 0,
): void {
  if (!observer.wants(HOOK[fate.transition])) return;
  const { row } = fate;
  const base = {
    id: row.id,
    type: row.type,
    key: row.key,
    dueAt: row.due_at,
    attempt: row.attempts,
  };
  switch (fate.transition) {
    case 'complete':
      observer.emit('onExecuted', {
        ...base,
        latenessMs: Math.max(0, claimMs - row.due_at.getTime() - limitWaitMs),
        limitWaitMs,
      });
      return;
    case 'discard':
    case 'exhaust':
      observer.emit('onDeadLettered', { ...base, reason: fate.reason });
      return;
    case 'retry':
      observer.emit('onFailed', { ...base, error: fate.error, retryAt: new Date(fate.dueAtMs) });
      return;
    case 'snooze':
      observer.emit('onSnoozed', { ...base, until: new Date(fate.dueAtMs) });
      return;
    case 'skip':
      observer.emit('onCancelled', { id: row.id, type: row.type, key: row.key, dueAt: row.due_at });
  }
}
