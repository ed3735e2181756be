/**
 * `spread`: 3,000 tasks due evenly over 60 s (one every 20 ms): lateness
 * p50/p99/max and the earliest (negative = early), for this project at its
 * default 1 s tick and at a 100 ms tick, for the peers, and for the floor: a
 * bare setTimeout per task, then the effect.
 */
import { ms, table } from '../harness/format.js';
import { runDueTasks, type DueRun } from '../harness/run-system.js';
import type { RunContext, Workload } from '../harness/workload.js';
import { PEERS, type SystemName } from '../systems/system.js';
import { notes } from './burst.js';

const SPAN_MS = 60_000;

export const spread: Workload<{ count: number; spanMs: number; runs: DueRun[] }> = {
  name: 'spread',
  title: 'Spread: 3,000 tasks due evenly over 60 s',
  async run(ctx: RunContext) {
    const count = ctx.size(3_000, 300);
    const spanMs = ctx.size(SPAN_MS, 6_000);
    const variants: Array<{ system: SystemName; tickMs?: number; ballast?: number }> = [
      { system: 'project', tickMs: 1000 },
      { system: 'project', tickMs: 1000, ballast: ctx.size(200_000, 20_000) },
      { system: 'project', tickMs: 100 },
      ...PEERS.map((system) => ({ system })),
      { system: 'timeout-floor' },
    ];
    const runs: DueRun[] = [];
    for (const v of variants) {
      runs.push(
        await runDueTasks({
          ...v,
          database: ctx.database(`spread_${v.system.replace('-', '_')}`),
          count,
          stepMs: spanMs / count,
          leadMs: 3_000,
          capMs: 30_000,
        }),
      );
    }
    return { count, spanMs, runs };
  },
  markdown({ runs }) {
    return table(
      ['system', 'effected', 'lateness min', 'p50', 'p99', 'max', 'duplicates', 'missing'],
      runs.map((r) => [
        r.label + notes(r),
        r.outcome.effected,
        ms(r.outcome.lateness?.min),
        ms(r.outcome.lateness?.p50),
        ms(r.outcome.lateness?.p99),
        ms(r.outcome.lateness?.max),
        r.outcome.duplicates,
        r.outcome.missing,
      ]),
    );
  },
};
