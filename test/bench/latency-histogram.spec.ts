import fc from 'fast-check';
import { LatencyHistogram } from '../../bench/long/harness-adapter/latency-histogram.js';
import { RollingLatency } from '../../bench/long/harness-adapter/rolling-latency.js';

/** The nearest-rank percentile of the values themselves, sorted. */
function exact(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil((p / 100) * sorted.length)) - 1];
}

// Microseconds from 0 to about 28 hours, dense where latencies usually are.
const latencyUs = fc.oneof(
  fc.integer({ min: 0, max: 5_000 }),
  fc.integer({ min: 0, max: 2_000_000 }),
  fc.integer({ min: 0, max: 100_000_000_000 }),
);

describe('LatencyHistogram', () => {
  it('gives every percentile within 0.1% of the exact one', () => {
    fc.assert(
      fc.property(
        fc.array(latencyUs, { minLength: 1, maxLength: 2000 }),
        fc.constantFrom(50, 90, 95, 99, 99.9, 100),
        (values, p) => {
          const histogram = new LatencyHistogram();
          for (const v of values) histogram.record(v);
          const want = exact(values, p);
          expect(Math.abs(histogram.percentile(p) - want)).toBeLessThanOrEqual(want * 0.001);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('is exact below 2,048 µs', () => {
    const histogram = new LatencyHistogram();
    for (let us = 0; us < 2048; us++) histogram.record(us);
    expect(histogram.percentile(50)).toBe(1023);
    expect(histogram.percentile(100)).toBe(2047);
  });

  it('merges like one histogram that saw both', () => {
    const a = new LatencyHistogram();
    const b = new LatencyHistogram();
    const both = new LatencyHistogram();
    for (let i = 0; i < 5000; i++) {
      const us = (i * 7919) % 3_000_000;
      (i % 2 ? a : b).record(us);
      both.record(us);
    }
    a.add(b);
    expect(a.count).toBe(5000);
    for (const p of [50, 95, 99]) expect(a.percentile(p)).toBe(both.percentile(p));
  });

  it('reports 0 when nothing was recorded', () => {
    expect(new LatencyHistogram().percentile(99)).toBe(0);
  });
});

describe('RollingLatency', () => {
  it('forgets what was recorded more than 30 seconds before the sample', () => {
    const rolling = new RollingLatency(30);
    const t0 = Date.UTC(2026, 0, 1);
    for (let i = 0; i < 100; i++) rolling.record(500, t0);
    for (let i = 0; i < 100; i++) rolling.record(2, t0 + 20_000);
    expect(rolling.percentiles(t0 + 25_000).p99).toBeCloseTo(500, 0);
    const later = rolling.percentiles(t0 + 31_000);
    expect(later).toEqual({ p50: 2, p95: 2, p99: 2 });
  });
});
