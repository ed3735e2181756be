import { Injectable } from '@nestjs/common';
import type {
  ClaimEvent,
  DelayObserver,
  TaskCancelledEvent,
  TaskDeadLetteredEvent,
  TaskExecutedEvent,
  TaskFailedEvent,
  TaskScheduledEvent,
  TaskSnoozedEvent,
} from 'nest-delay';
import type { Counter, Histogram } from 'prom-client';
import { Metrics } from './metrics.js';

type Child = { inc(): void };
type ObserveChild = { observe(value: number): void };

/**
 * Counts the engine's task events as a DelayObserver of its own, called
 * directly rather than through EventEmitter2: on the claim's path each event
 * costs a few counter increments and nothing else, which keeps the burst
 * within 5 % of running without metrics (see docs/operating.md's figures). The
 * labelled children are cached by type, since `labels()` builds one per call.
 */
@Injectable()
export class TaskMetrics implements DelayObserver {
  private readonly children = new Map<Counter | Histogram, Map<string, Child & ObserveChild>>();

  constructor(private readonly metrics: Metrics) {}

  onScheduled(event: TaskScheduledEvent) {
    this.child(this.metrics.scheduled, event.type).inc();
  }
  onCancelled(event: TaskCancelledEvent) {
    this.child(this.metrics.cancelled, event.type).inc();
  }
  onExecuted(event: TaskExecutedEvent) {
    this.child(this.metrics.executed, event.type).inc();
    this.child(this.metrics.lateness, event.type).observe(event.latenessMs / 1000);
    // Only types whose tasks have waited behind a limit since start: every
    // other type's waits are all 0, and observing them would cost every task.
    const { limitWaitMs } = event;
    if (limitWaitMs > 0 || this.children.get(this.metrics.limitWait)?.has(event.type))
      this.child(this.metrics.limitWait, event.type).observe(limitWaitMs / 1000);
  }
  onFailed(event: TaskFailedEvent) {
    this.child(this.metrics.failed, event.type).inc();
  }
  onDeadLettered(event: TaskDeadLetteredEvent) {
    this.child(this.metrics.deadLettered, event.type).inc();
  }
  onSnoozed(event: TaskSnoozedEvent) {
    this.child(this.metrics.snoozed, event.type).inc();
  }
  onClaim(event: ClaimEvent) {
    this.metrics.claimSize.observe(event.claimed);
    this.metrics.claimDuration.observe(event.durationMs / 1000);
  }

  private child(metric: Counter | Histogram, type: string): Child & ObserveChild {
    let byType = this.children.get(metric);
    if (!byType) this.children.set(metric, (byType = new Map()));
    let child = byType.get(type);
    if (!child) {
      child = (metric as Counter & Histogram).labels(type) as unknown as Child & ObserveChild;
      byType.set(type, child);
    }
    return child;
  }
}
