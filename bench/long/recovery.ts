/**
 * How long each phase's harm outlasted it, read from the series alone (so a
 * saved run's can be read anew): the first sample after the phase's end that
 * is back, so a phase that did no harm reads as the time to the next sample
 * (at most --sample-seconds). Throughput: effects/s over the sample's window
 * (--sample-seconds, 5 s by default) at ≥ 95% of the rate then offered, with
 * due-now depth near the clean phase's. Vacuum, for idle-in-tx: dead
 * tuples back to the clean phase's highest sample after the holder let go.
 * Measurements, never assertions.
 */
import type { PhaseRecord } from './phase-record.js';
import { loadFactor } from './phase-kinds.js';
import type { Sample, SeriesPhase } from './series.js';

const SHARE_OF_OFFERED = 0.95;

export interface Recovery {
  /**
   * Seconds after the phase's end until throughput was back; null if not
   * within the run; absent for the last phase, after which the load stops.
   */
  throughputSeconds?: number | null;
  /** The phase of the sample that was back: a later phase's own harm may have delayed it. */
  backDuring?: SeriesPhase;
  /** idle-in-tx only (and a clean phase run): seconds after the holder let go until dead tuples were back to the clean level. */
  deadTuplesSeconds?: number | null;
}

const totalDead = (s: Sample) =>
  s.deadTuples === null ? null : Object.values(s.deadTuples).reduce((a, n) => a + n, 0);

/** The samples of the first clean phase, whose highest depth and dead tuples are "the clean level". */
function cleanLevel(phases: PhaseRecord[], samples: Sample[]) {
  const clean = phases.find((p) => p.kind === 'clean');
  const inClean = clean
    ? samples.filter((s) => s.atMs >= clean.fromMs && s.atMs <= clean.toMs)
    : [];
  const highest = (values: (number | null)[]) =>
    values.reduce<number | null>((m, v) => (v === null ? m : Math.max(m ?? v, v)), null);
  return {
    depth: highest(inClean.map((s) => s.depth)) ?? 0,
    dead: highest(inClean.map(totalDead)),
  };
}

/**
 * The first sample after `fromMs` that is `back`, looking up to the first
 * sample after `untilMs` (the last phase's end): its delay and its phase.
 */
function firstBack(
  samples: Sample[],
  fromMs: number,
  untilMs: number,
  back: (s: Sample) => boolean,
): { seconds: number; phase: SeriesPhase } | null {
  const first = samples.findIndex((s) => s.atMs >= fromMs);
  if (first < 0) return null;
  for (const s of samples.slice(first)) {
    if (back(s)) return { seconds: Math.round((s.atMs - fromMs) / 100) / 10, phase: s.phase };
    if (s.atMs > untilMs) break;
  }
  return null;
}

/** Sets each phase's `recovery`; `rate` is the --rate option. */
export function setRecoveries(phases: PhaseRecord[], samples: Sample[], rate: number): void {
  if (phases.length === 0) return;
  const level = cleanLevel(phases, samples);
  const runEndMs = phases[phases.length - 1].toMs;
  for (const p of phases) {
    p.recovery = {};
    // After the last phase the load stops: there is no offered rate to be back to.
    if (p !== phases[phases.length - 1]) {
      const back = firstBack(samples, p.toMs, runEndMs, (s) => {
        if (s.phase === 'warm-up' || s.phase === 'drain') return false;
        if (s.depth === null || s.effectsPerSecond === null) return false;
        // The lower of the phase's rate and the one offered now: a next phase that offers more
        // (high-load) ramps its effects up over --ahead-seconds, one that offers less needs less.
        const offered = rate * Math.min(loadFactor(p.kind), loadFactor(s.phase));
        // One second of offered tasks above the clean phase's depth is still "near".
        return s.effectsPerSecond >= SHARE_OF_OFFERED * offered && s.depth <= level.depth + offered;
      });
      p.recovery.throughputSeconds = back?.seconds ?? null;
      if (back) p.recovery.backDuring = back.phase;
    }
    // Vacuum needs no load: the drain's samples count too. Without a clean phase, no level.
    const cleanDead = level.dead;
    if (p.kind === 'idle-in-tx' && cleanDead !== null)
      p.recovery.deadTuplesSeconds =
        firstBack(samples, p.toMs, Infinity, (s) => {
          const dead = totalDead(s);
          return dead !== null && dead <= cleanDead;
        })?.seconds ?? null;
  }
}
