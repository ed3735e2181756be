/**
 * `npm run bench:long`: this project, then pg-boss, under the same fixed load
 * and the same phases on a private Postgres cluster; figures per phase in
 * bench/results/long-<timestamp>.json and long-latest.md. `--assert` (the
 * smoke) exits non-zero unless every ledger holds and every phase completed.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startCluster } from './cluster.js';
import { parseOptions } from './options.js';
import { once } from './pg-client.js';
import { markdown } from './report.js';
import { runSystem, type SystemRecord } from './run-system.js';

const RESULTS = fileURLToPath(new URL('../../../../bench/results/', import.meta.url));

async function main(): Promise<number> {
  const o = parseOptions(process.argv.slice(2));
  const startedAt = new Date().toISOString();
  const began = Date.now();
  const progress = (line: string) =>
    process.stderr.write(`[long ${((Date.now() - began) / 1000).toFixed(0)} s] ${line}\n`);
  const cluster = await startCluster();
  const systems: SystemRecord[] = [];
  try {
    if (cluster.statements)
      await once(cluster.url, 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    for (const kind of o.systems) systems.push(await runSystem(kind, cluster, o, progress));
  } finally {
    cluster.destroy();
  }
  const table = markdown(o, systems, startedAt);
  process.stdout.write(table);
  if (o.write) {
    mkdirSync(RESULTS, { recursive: true });
    const stamp = startedAt.replace(/[:.]/g, '-');
    writeFileSync(
      `${RESULTS}long-${stamp}.json`,
      JSON.stringify({ startedAt, options: o, systems }, null, 2),
    );
    writeFileSync(`${RESULTS}long-latest.md`, table);
  }
  const failures = systems.flatMap((s) => [
    ...(s.ledger.ok ? [] : [`${s.system}: ledger ${JSON.stringify(s.ledger)}`]),
    ...s.phases
      .filter((p) => !p.completed)
      .map((p) => `${s.system}: phase ${p.kind} did not complete`),
  ]);
  progress(
    `done in ${((Date.now() - began) / 1000).toFixed(0)} s${failures.length ? `; ${failures.join('; ')}` : ''}`,
  );
  return o.assert && failures.length ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    console.error(error.stack ?? error.message);
    process.exit(1);
  },
);
