/**
 * `npm run bench:tracing [-- <count> <rounds>]`: what OpenTelemetry tracing
 * costs this project's burst. `count` tasks due at the same instant (100,000
 * by default) run three ways in each round, each on a fresh database, as the
 * burst workload runs them (`rounds` times, 3 by default, in alternation):
 *
 * - `disabled`: DelayModule's `tracing: false`, the API never loaded (what
 *   the package did before it traced at all);
 * - `off`: the API loaded and no SDK registered, as the app runs with its
 *   OTEL_* variables unset: the promise is no cost at all;
 * - `on`: an SDK registered, always-on sampler, batch export to memory, the
 *   tasks scheduled inside a span (every row carries a context, every
 *   handler run is a span: bench/systems/bench-tracing.ts).
 *
 * On a shared machine a single run is at the mercy of its neighbours; the
 * medians of each round's ratios are the figures. Reported, never asserted.
 * First, and alone with `--overhead`, the same three in-process, without
 * Postgres: the tracing work per claimed task (tracing-overhead.ts).
 */
import { dropDatabase, freshDatabase } from './harness/db.js';
import { runDueTasksOn, type DueRun } from './harness/run-system.js';
import { measureOverhead } from './tracing-overhead.js';

const overheadOnly = process.argv.includes('--overhead');
const [countArg, roundsArg] = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
const count = Number(countArg ?? 100_000);
const rounds = Number(roundsArg ?? 3);
const MODES = ['disabled', 'off', 'on'] as const;
type Mode = (typeof MODES)[number];

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function run(mode: Mode): Promise<DueRun> {
  const database = `bench_tracing_${mode}`;
  const url = await freshDatabase(database);
  try {
    return await runDueTasksOn(
      url,
      {
        system: 'project',
        count,
        stepMs: 0,
        leadMs: 1_500 + count / 50 + (count / 15_000) * 1_500,
        capMs: 300_000,
      },
      mode === 'off' ? {} : { tracing: mode },
    );
  } finally {
    await dropDatabase(database);
  }
}

const rate = (r: DueRun) => r.effectsPerSecond ?? 0;

async function main(): Promise<void> {
  console.log(await measureOverhead(5));
  if (overheadOnly) return;
  const results: Array<Record<Mode, DueRun>> = [];
  for (let i = 0; i < rounds; i++) {
    const round = {} as Record<Mode, DueRun>;
    for (const mode of MODES) round[mode] = await run(mode);
    results.push(round);
    const { disabled, off, on } = round;
    const bad = MODES.map((m) => round[m].outcome.missing + round[m].outcome.duplicates);
    console.log(
      `round ${i + 1}: ` +
        MODES.map((m) => `${m} ${rate(round[m])}/s ${round[m].cpuSeconds} CPU s`).join(', ') +
        `; off/disabled ${(rate(off) / rate(disabled)).toFixed(3)}× effects/s ${(off.cpuSeconds / disabled.cpuSeconds).toFixed(3)}× CPU, ` +
        `on/off ${(rate(on) / rate(off)).toFixed(3)}× effects/s ${(on.cpuSeconds / off.cpuSeconds).toFixed(3)}× CPU; ` +
        `missing + duplicates ${bad.join('/')}`,
    );
  }
  const ratio = (a: Mode, b: Mode, of: (r: DueRun) => number) =>
    median(results.map((r) => of(r[a]) / of(r[b]))).toFixed(3);
  const cpu = (r: DueRun) => r.cpuSeconds;
  console.log(
    `${count.toLocaleString('en-US')} tasks, ${rounds} rounds (medians): ` +
      `tracing off (API loaded, no SDK) / disabled = ${ratio('off', 'disabled', rate)}× effects/s, ${ratio('off', 'disabled', cpu)}× CPU s; ` +
      `on (always-on, in-memory export) / off = ${ratio('on', 'off', rate)}× effects/s, ${ratio('on', 'off', cpu)}× CPU s`,
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
