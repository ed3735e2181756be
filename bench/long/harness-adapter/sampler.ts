/**
 * Every SAMPLE_EVERY_S, on wall-clock boundaries (so samples of different
 * systems line up whenever each started), the six metrics the harness
 * requires, plus the producer's target rate. Rates are divided by the time
 * really elapsed since the previous sample, so a late timer does not inflate
 * them.
 */
import type { RollingLatency } from './rolling-latency.js';
import { SYSTEM, type Write } from './jsonl.js';

export interface SampleSources {
  latency: RollingLatency;
  /** Running totals. */
  enqueued(): number;
  completed(): number;
  /** Latest queue depth, or undefined when this replica does not report it. */
  depth(): number | undefined;
  targetRate(): number | undefined;
}

/** Milliseconds from `nowMs` to the next multiple of `periodMs` since the epoch. */
function untilBoundary(nowMs: number, periodMs: number): number {
  return periodMs - (nowMs % periodMs);
}

const round3 = (n: number) => Math.round(n * 1000) / 1000;

export class Sampler {
  private timer: NodeJS.Timeout | undefined;
  private last: { atMs: number; enqueued: number; completed: number } | undefined;

  constructor(
    private readonly periodS: number,
    private readonly instanceId: number,
    private readonly sources: SampleSources,
    private readonly write: Write,
  ) {}

  start(): void {
    this.last = {
      atMs: Date.now(),
      enqueued: this.sources.enqueued(),
      completed: this.sources.completed(),
    };
    this.schedule(Date.now());
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(fromMs: number): void {
    const boundary = fromMs + untilBoundary(fromMs, this.periodS * 1000);
    this.timer = setTimeout(() => {
      this.sample(boundary);
      // From the boundary at least: a timer a millisecond early must not sample it twice.
      this.schedule(Math.max(Date.now(), boundary));
    }, boundary - Date.now());
  }

  private sample(boundaryMs: number): void {
    const now = Date.now();
    const enqueued = this.sources.enqueued();
    const completed = this.sources.completed();
    const elapsedS = Math.max(0.001, (now - this.last!.atMs) / 1000);
    const claim = this.sources.latency.percentiles(now);
    const window = this.sources.latency.windowS;
    const metrics: [string, number | undefined, number][] = [
      ['claim_p50_ms', claim.p50, window],
      ['claim_p95_ms', claim.p95, window],
      ['claim_p99_ms', claim.p99, window],
      ['enqueue_rate', (enqueued - this.last!.enqueued) / elapsedS, this.periodS],
      ['completion_rate', (completed - this.last!.completed) / elapsedS, this.periodS],
      ['queue_depth', this.sources.depth(), 0],
      ['producer_target_rate', this.sources.targetRate(), 0],
    ];
    this.last = { atMs: now, enqueued, completed };
    const t = new Date(boundaryMs).toISOString();
    for (const [metric, value, window_s] of metrics) {
      if (value === undefined) continue;
      this.write({
        t,
        system: SYSTEM,
        kind: 'adapter',
        subject_kind: 'adapter',
        subject: '',
        metric,
        value: round3(value),
        window_s,
        instance_id: this.instanceId,
      });
    }
  }
}
