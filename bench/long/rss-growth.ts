/**
 * RSS growth over the run, per instance: at the end of the last phase against
 * the end of the first clean phase (else of the first phase). An instance
 * relaunched since (kill-worker) is a new process: it is compared with its
 * own first sample, which includes its own warm-up.
 */
import type { PhaseRecord } from './phase-record.js';
import type { Sample } from './series.js';

export interface RssGrowth {
  instance: number;
  fromMb: number;
  toMb: number;
  percent: number;
  from: 'first clean phase' | 'first phase' | 'its own first sample';
}

export function rssGrowth(phases: PhaseRecord[], samples: Sample[]): RssGrowth[] {
  const base = phases.find((p) => p.kind === 'clean') ?? phases[0];
  const last = phases[phases.length - 1];
  if (!base || !last) return [];
  return last.processes.flatMap((end) => {
    if (end.pid === null) return [];
    const atBase = base.processes.find((p) => p.pid === end.pid);
    const own = samples.flatMap((s) => s.processes).find((p) => p.pid === end.pid);
    const from = atBase ?? own;
    if (!from || from.rssMb === 0) return [];
    return [
      {
        instance: end.instance,
        fromMb: from.rssMb,
        toMb: end.rssMb,
        percent: Math.round(((end.rssMb - from.rssMb) / from.rssMb) * 1000) / 10,
        from: atBase
          ? base.kind === 'clean'
            ? 'first clean phase'
            : 'first phase'
          : 'its own first sample',
      },
    ];
  });
}
