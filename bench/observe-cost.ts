/**
 * `npm run bench:observe [-- <count> <pairs>]`: what metrics and events cost
 * a burst. This project runs `count` tasks due at the same instant (100,000
 * by default) with the app's observability off, then on, `pairs` times in
 * alternation (3 by default), each on a fresh database, as the burst workload
 * runs it. On a shared machine one pair is at the mercy of its neighbours;
 * the median of the pairs' ratios is the figure. Reported, never asserted.
 */
import { runDueTasks, type DueRun } from './harness/run-system.js';

const count = Number(process.argv[2] ?? 100_000);
const pairs = Number(process.argv[3] ?? 3);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function run(observe: boolean): Promise<DueRun> {
  return runDueTasks({
    system: 'project',
    observe,
    database: `bench_observe_${observe ? 'on' : 'off'}`,
    count,
    stepMs: 0,
    leadMs: 1_500 + count / 50 + (count / 15_000) * 1_500,
    capMs: 300_000,
  });
}

async function main(): Promise<void> {
  const rows: Array<{ off: DueRun; on: DueRun }> = [];
  for (let i = 0; i < pairs; i++) {
    const off = await run(false);
    const on = await run(true);
    rows.push({ off, on });
    console.log(
      `pair ${i + 1}: off ${off.effectsPerSecond}/s ${off.cpuSeconds} CPU s, on ${on.effectsPerSecond}/s ${on.cpuSeconds} CPU s, ` +
        `on/off ${((on.effectsPerSecond ?? 0) / (off.effectsPerSecond ?? 1)).toFixed(3)}× effects/s, ` +
        `${(on.cpuSeconds / off.cpuSeconds).toFixed(3)}× CPU; missing ${off.outcome.missing + on.outcome.missing}, duplicates ${off.outcome.duplicates + on.outcome.duplicates}`,
    );
  }
  const rate = median(
    rows.map((r) => (r.on.effectsPerSecond ?? 0) / (r.off.effectsPerSecond ?? 1)),
  );
  const cpu = median(rows.map((r) => r.on.cpuSeconds / r.off.cpuSeconds));
  console.log(
    `${count.toLocaleString('en-US')} tasks, ${pairs} pairs: metrics + events on/off = ${rate.toFixed(3)}× effects/s, ${cpu.toFixed(3)}× CPU s (medians)`,
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
