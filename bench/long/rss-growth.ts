/**
 * RSS growth over the run, per instance: its 5 s samples in the last phase
 * against its samples in the first clean phase (else the first phase). An
 * instance relaunched since (kill-worker) is a new process: its base is its
 * own samples from a minute after its start (its warm-up left out), over as
 * long as the base phase lasted.
 *
 * Two figures per window, not one sample each end: at 2,000/s each
 * instance's RSS swings between about 131 and 205 MB from one sample to the
 * next as V8's young generation grows and shrinks, so a first and a last
 * sample read that swing (+59% in one full hour) rather than growth. The
 * floor (the window's lowest sample, just after the young generation was
 * emptied) is what the process keeps: the growth that counts. The median
 * follows the load as well, since V8 sizes the young generation by the
 * allocation rate; it is kept beside the floor.
 */
import type { PhaseRecord } from './phase-record.js';
import type { Sample } from './series.js';

export interface RssGrowth {
  instance: number;
  /** The windows' lowest samples, and the growth from one to the other: the target's figure. */
  floor: WindowGrowth;
  /** The windows' medians, and the growth from one to the other. */
  median: WindowGrowth;
  /** Each window's highest sample. */
  highMb: [number, number];
  from: 'first clean phase' | 'first phase' | 'its own samples after its first minute';
}

export interface WindowGrowth {
  fromMb: number;
  toMb: number;
  percent: number;
}

/** A relaunched instance's base leaves out its first minute: JIT and pools warming up. */
export const RELAUNCH_WARM_UP_MS = 60_000;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const round1 = (n: number) => Math.round(n * 10) / 10;

export function rssGrowth(phases: PhaseRecord[], samples: Sample[]): RssGrowth[] {
  const base = phases.find((p) => p.kind === 'clean') ?? phases[0];
  const last = phases[phases.length - 1];
  if (!base || !last) return [];
  const rssOf = (pid: number, fromMs: number, toMs: number) =>
    samples.flatMap((s) =>
      s.atMs > fromMs && s.atMs <= toMs
        ? s.processes.filter((p) => p.pid === pid && p.rssMb > 0).map((p) => p.rssMb)
        : [],
    );
  return last.processes.flatMap((end) => {
    if (end.pid === null) return [];
    const pid = end.pid;
    const toWindow = rssOf(pid, last.fromMs, last.toMs);
    let fromWindow = rssOf(pid, base.fromMs, base.toMs);
    let from: RssGrowth['from'] = base.kind === 'clean' ? 'first clean phase' : 'first phase';
    if (fromWindow.length === 0) {
      const firstMs = samples.find((s) => s.processes.some((p) => p.pid === pid))?.atMs;
      if (firstMs === undefined) return [];
      const startMs = firstMs + RELAUNCH_WARM_UP_MS;
      fromWindow = rssOf(pid, startMs, startMs + (base.toMs - base.fromMs));
      from = 'its own samples after its first minute';
    }
    if (fromWindow.length === 0 || toWindow.length === 0) return [];
    const growth = (fromMb: number, toMb: number): WindowGrowth => ({
      fromMb: round1(fromMb),
      toMb: round1(toMb),
      percent: round1(((toMb - fromMb) / fromMb) * 100),
    });
    return [
      {
        instance: end.instance,
        floor: growth(Math.min(...fromWindow), Math.min(...toWindow)),
        median: growth(median(fromWindow), median(toWindow)),
        highMb: [Math.max(...fromWindow), Math.max(...toWindow)],
        from,
      },
    ];
  });
}
