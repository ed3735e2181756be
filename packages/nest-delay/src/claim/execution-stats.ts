import type { Fate } from '../tasks/task-transitions.js';
import type { BatchResult } from './claim-batch.js';

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
