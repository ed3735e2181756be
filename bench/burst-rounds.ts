/**
 * `npm run bench:burst-rounds [-- <count> <rounds>]`: this project's burst
 * against the cron scan and the bare one-transaction floor, in alternating
 * rounds (10,000 tasks due at one instant, 3 rounds by default), each run on
 * a fresh database as the burst workload runs it. Per round: drain (last
 * effect − due time), CPU µs per task of the system's process (scheduling
 * included, as `burst` counts it), the CPU of the database's backends per
 * task over the same span (/proc) and statements per task; then the medians
 * of project / cron-scan. On a shared machine only ratios within a round say
 * anything. Writes results/burst-rounds-<timestamp>.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SystemProcess } from './harness/child.js';
import { dropDatabase, freshDatabase, readOutcome, seedOrders, withClient } from './harness/db.js';
import { burstFigures, runDueTasksWithServerCpu, type DueRun } from './harness/run-system.js';
import type { SystemName } from './systems/system.js';

const count = Number(process.argv[2] ?? 10_000);
const rounds = Number(process.argv[3] ?? 3);
const RESULTS_DIR = fileURLToPath(new URL('../../../bench/results/', import.meta.url));

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** One burst, and the CPU the database's backends spent from scheduling to the last effect. */
async function due(system: SystemName): Promise<{ run: DueRun; serverMs: number }> {
  const database = `bench_rounds_${system.replace('-', '_')}`;
  return runDueTasksWithServerCpu({
    system,
    database,
    count,
    stepMs: 0,
    leadMs: 1_500 + count / 50 + (count / 15_000) * 1_500,
    capMs: 300_000,
  });
}

/** The bare effect, one autocommit UPDATE per task by 10 loops (the burst workload's floor). */
async function floor(): Promise<number> {
  const database = 'bench_rounds_bare';
  const url = await freshDatabase(database);
  const sut = SystemProcess.spawn();
  try {
    return await withClient(url, async (client) => {
      await seedOrders(client, { count, firstDueMs: Date.now(), stepMs: 0 });
      const { ms } = await sut.bare(url, 'one-per-transaction', count);
      const { missing } = await readOutcome(client, count);
      if (missing) throw new Error(`bare floor: ${missing} effects missing`);
      return Math.round(ms);
    });
  } finally {
    await sut.stop();
    await dropDatabase(database);
  }
}

const figure = (measured: { run: DueRun; serverMs: number }) => burstFigures(measured, count);

async function main(): Promise<void> {
  const results = [];
  for (let i = 0; i < rounds; i++) {
    const order: SystemName[] = i % 2 ? ['cron-scan', 'project'] : ['project', 'cron-scan'];
    const runs: Record<string, ReturnType<typeof figure>> = {};
    for (const system of order) runs[system] = figure(await due(system));
    const bareMs = await floor();
    const p = runs.project;
    const c = runs['cron-scan'];
    results.push({ round: i + 1, order, project: p, cronScan: c, bareOnePerTransactionMs: bareMs });
    console.log(
      `round ${i + 1} (${order.join(' first, ')}): project ${p.drainMs} ms, ${p.cpuUsPerTask} µs/task (server ${p.serverUsPerTask}), ${p.statementsPerTask} st/task; ` +
        `cron-scan ${c.drainMs} ms, ${c.cpuUsPerTask} µs/task (server ${c.serverUsPerTask}), ${c.statementsPerTask} st/task; bare floor ${bareMs} ms; ` +
        `missing ${p.missing + c.missing}, duplicates ${p.duplicates + c.duplicates}`,
    );
  }
  const drain = median(results.map((r) => (r.project.drainMs ?? 0) / (r.cronScan.drainMs ?? 1)));
  const cpu = median(results.map((r) => r.project.cpuUsPerTask / r.cronScan.cpuUsPerTask));
  const summary = `${count.toLocaleString('en-US')} tasks, ${rounds} rounds: project / cron-scan = ${drain.toFixed(3)}× drain, ${cpu.toFixed(3)}× CPU per task (medians of the rounds' ratios)`;
  console.log(summary);
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = `burst-rounds-${new Date().toISOString().replace(/[:.]/g, '-')}.json`;
  writeFileSync(
    RESULTS_DIR + file,
    JSON.stringify({ count, rounds, results, drainRatio: drain, cpuRatio: cpu }, null, 2),
  );
  console.log(`Wrote bench/results/${file}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
