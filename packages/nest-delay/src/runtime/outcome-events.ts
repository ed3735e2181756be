import type { ObserverCalls } from '../observer/observer-calls.js';
import type { BatchResult, Outcome } from './claim-batch.js';

const HOOK = {
  executed: 'onExecuted',
  retry: 'onFailed',
  dead: 'onDeadLettered',
  snooze: 'onSnoozed',
} as const satisfies Record<Outcome['kind'], string>;

/**
 * Tells the observer what one committed claim did: each task's outcome, then
 * the claim itself. Lateness is measured against the claim's time, the
 * `executed_at` the table records. Nothing is built for a hook nobody has.
 */
export function reportBatch(
  observer: ObserverCalls,
  result: BatchResult,
  requested: number,
  claimMs: number,
  durationMs: number,
): void {
  for (const outcome of result.outcomes) reportOutcome(observer, outcome, claimMs);
  if (observer.wants('onClaim')) {
    observer.emit('onClaim', { requested, claimed: result.claimedIds.size, durationMs });
  }
}

export function reportOutcome(observer: ObserverCalls, outcome: Outcome, claimMs: number): void {
  if (!observer.wants(HOOK[outcome.kind])) return;
  const { task } = outcome;
  const base = {
    id: task.id,
    type: task.type,
    key: task.key,
    dueAt: task.due_at,
    attempt: task.attempts,
  };
  switch (outcome.kind) {
    case 'executed':
      observer.emit('onExecuted', {
        ...base,
        latenessMs: Math.max(0, claimMs - task.due_at.getTime()),
      });
      return;
    case 'dead':
      observer.emit('onDeadLettered', { ...base, reason: outcome.reason });
      return;
    case 'retry':
      observer.emit('onFailed', {
        ...base,
        error: outcome.reason ?? 'failed',
        retryAt: new Date(outcome.dueAtMs),
      });
      return;
    case 'snooze':
      observer.emit('onSnoozed', { ...base, until: new Date(outcome.dueAtMs) });
  }
}
