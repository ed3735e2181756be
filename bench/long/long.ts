/**
 * `npm run bench:long`: this project, then pg-boss, under the same fixed load
 * and the same phases on a private Postgres cluster; in bench/results/
 * long-<stamp>.json every figure and the series, long-latest.md the tables,
 * long-<stamp>-<plot>.svg and long-latest-<plot>.svg the charts.
 * `--assert` (the smoke) exits non-zero unless every ledger holds and every
 * phase completed; `--report run.json` rewrites the Markdown and the charts
 * of a saved run, running nothing.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startCluster } from './cluster.js';
import { parseOptions, type LongOptions } from './options.js';
import { once } from './pg-client.js';
import { renderPlots } from './plots.js';
import { setRecoveries } from './recovery.js';
import { markdown } from './report.js';
import { rssGrowth } from './rss-growth.js';
import { runSystem, type SystemRecord } from './run-system.js';

const RESULTS = fileURLToPath(new URL('../../../../bench/results/', import.meta.url));

interface LongRun {
  startedAt: string;
  options: LongOptions;
  systems: SystemRecord[];
}

/** The Markdown on stdout; with `write`, it and the charts in RESULTS (and the JSON if `json`). */
async function output(run: LongRun, write: boolean, json: boolean): Promise<string[]> {
  const stamp = run.startedAt.replace(/[:.]/g, '-');
  // Rendered without --write too, so the smoke draws them: a chart that fails fails it.
  const plots = await renderPlots(run.systems);
  const table = markdown(run.options, run.systems, run.startedAt, write ? [...plots.keys()] : []);
  process.stdout.write(table);
  if (!write) return [];
  mkdirSync(RESULTS, { recursive: true });
  const written: string[] = [];
  const put = (name: string, text: string) => {
    writeFileSync(`${RESULTS}${name}`, text);
    written.push(name);
  };
  if (json) put(`long-${stamp}.json`, JSON.stringify(run, null, 2));
  put('long-latest.md', table);
  for (const [name, svg] of plots) {
    put(`long-${stamp}-${name}.svg`, svg);
    put(`long-latest-${name}.svg`, svg);
  }
  return written;
}

async function main(): Promise<number> {
  const o = parseOptions(process.argv.slice(2));
  if (o.report) {
    const saved = JSON.parse(readFileSync(o.report, 'utf8')) as LongRun;
    // Figures read from the series are read anew, after any change to how.
    for (const s of saved.systems) {
      setRecoveries(s.phases, s.series, saved.options.rate);
      s.rssGrowth = rssGrowth(s.phases, s.series);
    }
    const written = await output(saved, o.write, false);
    process.stderr.write(`[long] from ${o.report}: wrote ${written.join(', ') || 'nothing'}\n`);
    return 0;
  }
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
  const written = await output({ startedAt, options: o, systems }, o.write, true);
  if (written.length) progress(`wrote bench/results/{${written.join(',')}}`);
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
