import type { Logger } from '@nestjs/common';
import { errorText } from '../delay.messages.js';
import type { DelayObserver } from '../delay-observer.js';
import type { TaskId } from '../task.types.js';

type EventOf<K extends keyof DelayObserver> = Parameters<NonNullable<DelayObserver[K]>>[0];

/*
 * The observer's calls, and what the engine tells it and its counters of
 * each claimed attempt's end.
 */

/**
 * Calls the app's observer and the package's own so that none can hurt a
 * task: a throw or a rejection is logged and dropped. Callers ask
 * `wants(name)` before building an event, so nobody listening costs nothing.
 */
export class ObserverCalls {
  private readonly observers: DelayObserver[];

  constructor(
    observer: DelayObserver | undefined,
    private readonly logger: Logger,
  ) {
    this.observers = observer ? [observer] : [];
  }

  add(observer: DelayObserver): void {
    this.observers.push(observer);
  }

  wants(name: keyof DelayObserver): boolean {
    return this.observers.some((observer) => typeof observer[name] === 'function');
  }

  emit<K extends keyof DelayObserver>(name: K, event: EventOf<K>): void {
    for (const observer of this.observers) {
      try {
        const returned = (observer[name] as ((event: EventOf<K>) => unknown) | undefined)?.call(
          observer,
          event,
        );
        if (returned instanceof Promise)
          returned.catch((error: unknown) => this.failed(name, error));
      } catch (error) {
        this.failed(name, error);
      }
    }
  }

  private failed(name: string, error: unknown): void {
    this.logger.error(`DelayObserver.${name} threw, ignored: ${errorText(error)}`);
  }
}

/** A claimed attempt's end as the counters and the observer hear of it (a Fate: tasks/task-transitions.ts). */
export type HeardFate = {
  readonly row: {
    readonly id: TaskId;
    readonly type: string;
    readonly key: string | null;
    readonly due_at: Date;
    readonly attempts: number;
  };
} & (
  | { readonly transition: 'complete' }
  | { readonly transition: 'retry'; readonly error: string; readonly dueAtMs: number }
  | { readonly transition: 'snooze'; readonly dueAtMs: number }
  | { readonly transition: 'discard' | 'exhaust' | 'skip'; readonly reason: string }
);

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

/** Each transition's counter, and the observer's hook that hears of it. */
const COUNTED = {
  complete: ['executed', 'onExecuted'],
  retry: ['failed', 'onFailed'],
  discard: ['deadLettered', 'onDeadLettered'],
  exhaust: ['deadLettered', 'onDeadLettered'],
  snooze: ['snoozed', 'onSnoozed'],
  skip: ['skipped', 'onCancelled'],
} as const satisfies Record<
  HeardFate['transition'],
  readonly [keyof TypeCounts, keyof DelayObserver]
>;

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

  /** A committed claim: its fates, and whether its optimistic pass was rerun with savepoints. */
  record(fates: readonly HeardFate[], rerun: boolean): void {
    this.batches++;
    if (rerun) this.reruns++;
    for (const fate of fates) this.recordOne(fate);
  }

  /** One fate (in a batch, or decided outside one: a claim that was cut off). */
  recordOne(fate: HeardFate): void {
    const { type } = fate.row;
    const key = COUNTED[fate.transition][0];
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

/**
 * Tells the observer what one committed claim did: each task's fate, then
 * the claim itself. Lateness is measured against the claim's time, the
 * `executed_at` the table records. Nothing is built for a hook nobody has.
 */
export function reportClaim(
  observer: ObserverCalls,
  fates: readonly HeardFate[],
  counts: { requested: number; claimed: number },
  claimMs: number,
  durationMs: number,
  /** A gate's claim: how long each task waited behind its limit. */
  limitWaits?: Map<string, number>,
): void {
  for (const fate of fates) reportFate(observer, fate, claimMs, limitWaits?.get(fate.row.id) ?? 0);
  if (observer.wants('onClaim')) observer.emit('onClaim', { ...counts, durationMs });
}

/** `limitWaitMs`: how long it waited behind a shared limit or a pause, kept out of its lateness. */
export function reportFate(
  observer: ObserverCalls,
  fate: HeardFate,
  claimMs: number,
  limitWaitMs = 0,
): void {
  if (!observer.wants(COUNTED[fate.transition][1])) return;
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
