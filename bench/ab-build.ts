/**
 * One engine build's burst or spread, run from inside that build's tree:
 * `bench:ab` (ab.ts) copies the compiled bench there, so `nest-delay`, Nest
 * and TypeORM resolve to that tree and only the engine differs between builds.
 *   node ab-build.js burst|spread [count]
 * burst: `count` tasks (10,000) due at one instant, as bench:burst-rounds runs
 * them; spread: `count` (3,000) due evenly over 60 s, as `--only spread` runs
 * this project at its 1 s tick. Each on a fresh database; one JSON line out.
 */
import { burstFigures, runDueTasksWithServerCpu } from './harness/run-system.js';

const SPREAD_MS = 60_000;
const mode = process.argv[2];
if (mode !== 'burst' && mode !== 'spread') throw new Error(`burst or spread, got ${mode}`);
const count = Number(process.argv[3] ?? (mode === 'burst' ? 10_000 : 3_000));
const spanMs = mode === 'spread' ? (SPREAD_MS * count) / 3_000 : 0;
const database = `bench_ab_${mode}`;

const measured = await runDueTasksWithServerCpu({
  system: 'project',
  tickMs: 1000,
  database,
  count,
  stepMs: spanMs / count,
  leadMs: mode === 'burst' ? 1_500 + count / 50 + (count / 15_000) * 1_500 : 3_000,
  capMs: mode === 'burst' ? 300_000 : 30_000,
});
console.log(
  JSON.stringify({
    mode,
    count,
    /** Where `nest-delay` resolved from: the build under test, not this tree's. */
    engine: import.meta.resolve('nest-delay'),
    ...burstFigures(measured, count),
    lateness: measured.run.outcome.lateness,
    capped: measured.run.capped,
  }),
);
process.exit(0);
