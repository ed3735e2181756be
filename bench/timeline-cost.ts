/**
 * `npm run bench:timeline [-- <count> <pairs>]`: what the timeline's history
 * costs a burst. This project runs `count` tasks due at the same instant
 * (20,000 by default) without an entity (no history written), then each with
 * an entity (`order:<id>`: its scheduled, started and executed steps
 * recorded), `pairs` times in alternation (1 by default), each on a fresh
 * database, as the burst workload runs it. The median of the pairs' ratios
 * is the figure. Reported, never asserted.
 */
import { dropDatabase, freshDatabase, withClient } from './harness/db.js';
import { runDueTasksOn, type DueRun } from './harness/run-system.js';

const count = Number(process.argv[2] ?? 20_000);
const pairs = Number(process.argv[3] ?? 1);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** One burst; with `entity`, also how many history rows it wrote (to show it wrote them). */
async function run(entity: boolean): Promise<DueRun & { events: number }> {
  // The system's child process is forked with this environment (systems/project.ts reads it).
  process.env.BENCH_ENTITY = entity ? '1' : '0';
  const database = `bench_timeline_${entity ? 'on' : 'off'}`;
  const url = await freshDatabase(database);
  try {
    const result = await runDueTasksOn(url, {
      system: 'project',
      count,
      stepMs: 0,
      leadMs: 1_500 + count / 50 + (count / 15_000) * 1_500,
      capMs: 300_000,
    });
    const events = await withClient(url, async (client) =>
      Number((await client.query(`SELECT count(*) AS n FROM delay_task_event`)).rows[0].n),
    );
    return { ...result, events };
  } finally {
    await dropDatabase(database);
  }
}

async function main(): Promise<void> {
  const rows: Array<{ off: DueRun; on: DueRun }> = [];
  for (let i = 0; i < pairs; i++) {
    const off = await run(false);
    const on = await run(true);
    rows.push({ off, on });
    console.log(
      `pair ${i + 1}: no entity ${off.effectsPerSecond}/s ${off.cpuSeconds} CPU s, entity ${on.effectsPerSecond}/s ${on.cpuSeconds} CPU s, ` +
        `${((on.effectsPerSecond ?? 0) / (off.effectsPerSecond ?? 1)).toFixed(3)}× effects/s, ` +
        `${(on.cpuSeconds / off.cpuSeconds).toFixed(3)}× CPU; history rows ${off.events} / ${on.events}; missing ${off.outcome.missing + on.outcome.missing}, duplicates ${off.outcome.duplicates + on.outcome.duplicates}`,
    );
  }
  const rate = median(
    rows.map((r) => (r.on.effectsPerSecond ?? 0) / (r.off.effectsPerSecond ?? 1)),
  );
  const cpu = median(rows.map((r) => r.on.cpuSeconds / r.off.cpuSeconds));
  console.log(
    `${count.toLocaleString('en-US')} tasks, ${pairs} pair(s): with history / without = ${rate.toFixed(3)}× effects/s, ${cpu.toFixed(3)}× CPU s (medians)`,
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
