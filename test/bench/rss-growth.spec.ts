import { RELAUNCH_WARM_UP_MS, rssGrowth } from '../../bench/long/rss-growth.js';
import type { PhaseRecord } from '../../bench/long/phase-record.js';
import type { Sample } from '../../bench/long/series.js';

const SAMPLE_MS = 5_000;

function phase(
  kind: PhaseRecord['kind'],
  fromMs: number,
  toMs: number,
  pids: number[],
): PhaseRecord {
  return {
    kind,
    fromMs,
    toMs,
    processes: pids.map((pid, instance) => ({
      instance,
      pid,
      rssMb: 0,
      cpuMs: 0,
      cpuMsPerEffect: 0,
    })),
  } as unknown as PhaseRecord;
}

/** A sample every 5 s from 0 to `toMs`, each instance's RSS given by `rss(pid, atMs)`. */
function series(
  toMs: number,
  pidsAt: (atMs: number) => number[],
  rss: (pid: number, atMs: number) => number,
): Sample[] {
  const samples: Sample[] = [];
  for (let atMs = SAMPLE_MS; atMs <= toMs; atMs += SAMPLE_MS)
    samples.push({
      atMs,
      processes: pidsAt(atMs).map((pid, instance) => ({
        instance,
        pid,
        rssMb: rss(pid, atMs),
        cpuPercent: null,
      })),
    } as unknown as Sample);
  return samples;
}

/** The young generation's swing: a saw between 131 and 205 MB, no trend. */
const swing = (atMs: number) => [131, 205, 150, 190, 140, 170][(atMs / SAMPLE_MS) % 6];

describe('RSS growth over the long run', () => {
  const phases = [phase('clean', 0, 400_000, [1]), phase('recovery', 800_000, 1_200_000, [1])];

  it('reads a swing with no trend as no growth, where one sample each end differs by a third', () => {
    const samples = series(
      1_200_000,
      () => [1],
      (_pid, atMs) => swing(atMs),
    );
    const [growth] = rssGrowth(phases, samples);
    expect(growth.floor).toEqual({ fromMb: 131, toMb: 131, percent: 0 });
    expect(Math.abs(growth.median.percent)).toBeLessThanOrEqual(5);
    expect(growth.highMb).toEqual([205, 205]);
    // What a sample each end read of the same series.
    const first = samples[0].processes[0].rssMb;
    const last = samples.at(-1)!.processes[0].rssMb;
    expect(Math.abs(last - first) / first).toBeGreaterThan(0.3);
  });

  it('reads growth under the swing as growth', () => {
    const samples = series(
      1_200_000,
      () => [1],
      (_pid, atMs) => swing(atMs) + atMs / 20_000,
    );
    const [growth] = rssGrowth(phases, samples);
    // 0.05 MB a second: 40 MB between the two windows' middles, on a floor of about 140.
    expect(growth.floor.percent).toBeGreaterThan(20);
    expect(growth.median.percent).toBeGreaterThan(20);
    expect(growth.from).toBe('first clean phase');
  });

  it('compares a relaunched instance with its own samples after its first minute, not its warm-up', () => {
    const relaunchedAtMs = 500_000;
    const samples = series(
      1_200_000,
      (atMs) => (atMs < relaunchedAtMs ? [1] : [2]),
      // Its warm-up reads low (the heap not grown yet), then the same swing.
      (pid, atMs) => (pid === 2 && atMs < relaunchedAtMs + RELAUNCH_WARM_UP_MS ? 110 : swing(atMs)),
    );
    const [growth] = rssGrowth([phases[0], phase('recovery', 800_000, 1_200_000, [2])], samples);
    expect(growth.from).toBe('its own samples after its first minute');
    expect(growth.floor.fromMb).toBe(131);
    expect(growth.floor.percent).toBe(0);
  });
});
