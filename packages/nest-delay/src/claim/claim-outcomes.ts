import type { Fate } from '../tasks/task-transitions.js';
import type { BatchResult } from './claim-batch.js';
import type { ObserverCalls } from '../observer/observer-calls.js';

/** What became of the tasks one instance ran, by type. */
export interface TypeCounts {
  executed: number;
  /** Attempts that failed and were scheduled again. */
  failed: number;
  /** Out of attempts, discarded by their handler, or without a handler. */
  deadLettered: number;
  snoozed: number;
  /** Occurrences of a schedule skipped because an earlier one was still pending (overlap 'skip'). */
  skipped: number;
}

export interface ExecutionCounts extends TypeCounts {
  batches: number;
  /** Batches whose optimistic pass failed and ran again with savepoints. */
  reruns: number;
  byType: Record<string, TypeCounts>;
}

const KEY: Record<Fate['transition'], keyof TypeCounts> = {
  complete: 'executed',
  retry: 'failed',
  discard: 'deadLettered',
  exhaust: 'deadLettered',
  snooze: 'snoozed',
  skip: 'skipped',
};

const zero = (): TypeCounts => ({
  executed: 0,
  failed: 0,
  deadLettered: 0,
  snoozed: 0,
  skipped: 0,
});

/** Counters in memory (per instance, as metrics expect), never a count over the table. */
export class ExecutionStats {
  private readonly totals = zero();
  private readonly byType = new Map<string, TypeCounts>();
  private batches = 0;
  private reruns = 0;

  record(result: BatchResult): void {
    this.batches++;
    if (result.rerun) this.reruns++;
    for (const fate of result.fates) this.recordOne(fate);
  }

  /** One fate (in a batch, or decided outside one: a claim that was cut off). */
  recordOne(fate: Fate): void {
    const { type } = fate.row;
    const key = KEY[fate.transition];
    this.totals[key]++;
    let counts = this.byType.get(type);
    if (!counts) this.byType.set(type, (counts = zero()));
    counts[key]++;
  }

  snapshot(): ExecutionCounts {
    return {
      ...this.totals,
      batches: this.batches,
      reruns: this.reruns,
      byType: Object.fromEntries([...this.byType].map(([type, counts]) => [type, { ...counts }])),
    };
  }
}

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
