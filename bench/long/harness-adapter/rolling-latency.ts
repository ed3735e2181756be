/**
 * Pickup latencies over the last 30 seconds: one histogram per wall-clock
 * second in a ring, merged when a sample is taken. Memory is the ring's 32
 * histograms, whatever the rate or the length of the run.
 */
import { LatencyHistogram } from './latency-histogram.js';

const SLOTS = 32;

export interface LatencyPercentiles {
  p50: number;
  p95: number;
  p99: number;
}

export class RollingLatency {
  private readonly slots = Array.from({ length: SLOTS }, () => ({
    second: -1,
    histogram: new LatencyHistogram(),
  }));
  private readonly merged = new LatencyHistogram();

  constructor(readonly windowS = 30) {
    if (windowS >= SLOTS) throw new RangeError(`windowS must be below ${SLOTS}; got ${windowS}`);
  }

  /** A latency in ms, counted in the second `atMs` falls in. */
  record(latencyMs: number, atMs: number): void {
    const second = Math.floor(atMs / 1000);
    const slot = this.slots[second % SLOTS];
    if (slot.second !== second) {
      slot.second = second;
      slot.histogram.clear();
    }
    slot.histogram.record(latencyMs * 1000);
  }

  /** Percentiles in ms of what was recorded in the window ending at `nowMs` (0 when nothing was). */
  percentiles(nowMs: number): LatencyPercentiles {
    const now = Math.floor(nowMs / 1000);
    this.merged.clear();
    for (const slot of this.slots)
      if (slot.second >= now - this.windowS && slot.second <= now) this.merged.add(slot.histogram);
    const ms = (p: number) => this.merged.percentile(p) / 1000;
    return { p50: ms(50), p95: ms(95), p99: ms(99) };
  }
}
