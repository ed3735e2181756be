import type { BatchResult, Outcome } from './claim-batch.js';

/** What became of the tasks one instance ran, by type. */
export interface TypeCounts {
  executed: number;
  /** Attempts that failed and were scheduled again. */
  failed: number;
  /** Out of attempts, discarded by their handler, or without a handler. */
  deadLettered: number;
  snoozed: number;
}

export interface ExecutionCounts extends TypeCounts {
  batches: number;
  /** Batches whose optimistic pass failed and ran again fenced. */
  reruns: number;
  byType: Record<string, TypeCounts>;
}

const KEY: Record<Outcome['kind'], keyof TypeCounts> = {
  executed: 'executed',
  retry: 'failed',
  dead: 'deadLettered',
  snooze: 'snoozed',
};

const zero = (): TypeCounts => ({ executed: 0, failed: 0, deadLettered: 0, snoozed: 0 });

/** Counters in memory (per instance, as metrics expect), never a count over the table. */
export class ExecutionStats {
  private readonly totals = zero();
  private readonly byType = new Map<string, TypeCounts>();
  private batches = 0;
  private reruns = 0;

  record(result: BatchResult): void {
    this.batches++;
    if (result.rerun) this.reruns++;
    for (const outcome of result.outcomes) this.count(outcome.type, outcome.kind);
  }

  private count(type: string, kind: Outcome['kind']): void {
    const key = KEY[kind];
    this.totals[key]++;
    let counts = this.byType.get(type);
    if (!counts) this.byType.set(type, (counts = zero()));
    counts[key]++;
  }

  /** One outcome decided outside a batch (a claim that was cut off). */
  recordOne(type: string, kind: Outcome['kind']): void {
    this.count(type, kind);
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
