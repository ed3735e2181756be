/**
 * `npm run bench [-- --only burst,spread] [-- --quick]`: runs the workloads in
 * order, then writes bench/results/<timestamp>.json, latest.md and latest.svg.
 * `npm run bench -- --report results/<timestamp>.json` rewrites latest.md and
 * latest.svg from a saved run, running nothing; `--report a.json,b.json`
 * combines saved runs, each workload from the last run that has it (a full
 * run, and a later run of one workload), each section naming its run.
 * A workload that fails is recorded as failed and the others still run.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderChart } from './harness/chart.js';
import { table } from './harness/format.js';
import { describeMachine, libraryVersions } from './harness/machine.js';
import { log } from './harness/progress.js';
import { judge, type TargetVerdict } from './harness/targets.js';
import type { RunContext, Workload } from './harness/workload.js';
import { burst } from './workloads/burst.js';
import { http } from './workloads/http.js';
import { idle } from './workloads/idle.js';
import { recovery } from './workloads/recovery.js';
import { recurring } from './workloads/recurring.js';
import { scale } from './workloads/scale.js';
import { schedule } from './workloads/schedule.js';
import { retention } from './workloads/retention.js';
import { soak } from './workloads/soak.js';
import { spread } from './workloads/spread.js';
import { wheel } from './workloads/wheel.js';

// soak is opt-in (20 minutes): `--only soak`.
const WORKLOADS: Workload[] = [
  wheel,
  schedule,
  burst,
  spread,
  recurring,
  retention,
  idle,
  scale,
  recovery,
  http,
  soak,
];
const RESULTS_DIR = fileURLToPath(new URL('../../../bench/results/', import.meta.url));

const SETTINGS = {
  poolSize: 10,
  concurrency: 10,
  bulkCallSize: 1000,
  oneCallInFlight: 50,
  effect:
    'UPDATE bench_order SET stars = 5, effects = effects + 1, effected_at = clock_timestamp() WHERE id = $1',
  project:
    'DelayModule defaults (tickMs 1000, slots 3600, batchSize 50) with concurrency 10; effect through the claim transaction manager',
  bullmq:
    'delayed jobs (add/addBulk with delay), Worker concurrency 10, removeOnComplete; effect on a pg pool of 10',
  'bullmq-pg':
    'as bullmq, on its PostgreSQL backend (createPostgresBackend, { connectionString, schema, migrate: true, max 10 } for the Queue and the Worker, each its own pool); effect on a pg pool of 10',
  'pg-boss':
    'send/insert with startAfter, work() with localConcurrency 10, batchSize 50, pollingIntervalSeconds 0.5 (its minimum), burstWhenBatchFull, pool max 10',
  'graphile-worker':
    'addJob/addJobs with runAt, concurrency 10, one pg pool of 10 shared with WorkerUtils, LISTEN/NOTIFY, pollInterval 500 ms',
  'cron-scan':
    'bench_task table, a scan on every whole second, FOR UPDATE SKIP LOCKED, 50 per transaction, up to 10 loops',
};

function parseArgs(argv: string[]) {
  const only: string[] = [];
  let quick = false;
  let report: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--report') report = argv[++i];
    else if (argv[i] === '--only') only.push(...(argv[++i] ?? '').split(','));
    else if (argv[i].startsWith('--only=')) only.push(...argv[i].slice(7).split(','));
    else if (argv[i] === '--quick') quick = true;
    else
      throw new Error(
        `unknown argument ${argv[i]}; use --only <${WORKLOADS.map((w) => w.name).join('|')}>[,...], --quick, or --report <results.json>[,...]`,
      );
  }
  const unknown = only.filter((name) => !WORKLOADS.some((w) => w.name === name));
  if (unknown.length)
    throw new Error(
      `unknown workload(s) ${unknown.join(', ')}; choose from ${WORKLOADS.map((w) => w.name).join(', ')}`,
    );
  if (report !== undefined && (only.length > 0 || quick))
    throw new Error(
      '--report rewrites the tables of a saved run; it runs nothing, so takes no --only or --quick',
    );
  return { only, quick, report };
}

/** A run's heading lines: when, the command, the machine and the versions. */
function describeRun(report: Record<string, any>): string[] {
  const m = report.machine;
  return [
    `Run ${report.startedAt} (${Math.round(report.durationSeconds / 60)} min), \`${report.command}\`${report.quick ? ' — **quick mode: reduced sizes, not comparable**' : ''}.`,
    `Machine: ${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB, ${m.os}; Node ${m.node}; PostgreSQL ${m.postgres}; Redis ${m.redis}.`,
    `Versions: ${Object.entries(report.versions)
      .map(([k, v]) => `${k} ${String(v)}`)
      .join(', ')}.`,
  ];
}

/**
 * Saved runs combined (`--report a.json,b.json`): each workload from the last
 * run that has it; `runs` keeps every run's heading and which sections it gave.
 */
function combine(reports: Array<Record<string, any>>): Record<string, any> {
  if (reports.length === 1) return reports[0];
  const workloads: Record<string, unknown> = {};
  const sectionRun: Record<string, number> = {};
  reports.forEach((r, i) => {
    for (const [name, result] of Object.entries(r.workloads as Record<string, unknown>)) {
      workloads[name] = result;
      sectionRun[name] = i;
    }
  });
  return { ...reports[0], workloads, sectionRun, runs: reports };
}

function markdown(report: Record<string, any>, verdicts: TargetVerdict[]): string {
  const runs = report.runs as Array<Record<string, any>> | undefined;
  const sectionRun = report.sectionRun as Record<string, number> | undefined;
  const lines = [
    `# Benchmark results`,
    '',
    ...(runs
      ? [
          `${runs.length} runs combined (\`npm run bench -- --report\` with their results): each section comes from one run and says which; ratios compare figures of the same run. See bench/README.md for how each is measured.`,
          ...runs.flatMap((r, i) => [
            '',
            `${i + 1}. ${describeRun(r).join(' ')} Sections: ${Object.keys(sectionRun ?? {})
              .filter((name) => sectionRun![name] === i)
              .join(', ')}.`,
          ]),
        ]
      : [
          ...describeRun(report),
          'Every figure below comes from this one run; ratios compare figures of the same run. See bench/README.md for how each is measured.',
        ]),
    '',
    '![lateness and effects per second](latest.svg)',
    '',
    '## Targets',
    '',
    table(
      ['target', 'measured', 'verdict'],
      verdicts.map((v) => [v.target, v.measured, v.met ? 'met' : `**missed**: ${v.missedBy}`]),
    ),
  ];
  for (const w of WORKLOADS) {
    const result = report.workloads[w.name];
    if (result === undefined) continue;
    const from = runs && sectionRun ? runs[sectionRun[w.name]] : undefined;
    lines.push(
      '',
      `## ${w.title}`,
      '',
      ...(from ? [`From run ${from.startedAt} (\`${from.command}\`).`, ''] : []),
      result.failed ? `Failed: ${result.failed}` : w.markdown(result),
    );
  }
  return lines.join('\n') + '\n';
}

/** Writes latest.md (targets judged anew) and latest.svg for a run's report. */
async function writeTables(report: Record<string, any>): Promise<string> {
  const verdicts = judge(report.workloads);
  const md = markdown(report, verdicts);
  writeFileSync(`${RESULTS_DIR}latest.md`, md);
  try {
    const svg = await renderChart(report.workloads);
    if (svg) writeFileSync(`${RESULTS_DIR}latest.svg`, svg);
  } catch (error) {
    log(`chart failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  return md;
}

async function main(): Promise<void> {
  const { only, quick, report: saved } = parseArgs(process.argv.slice(2));
  if (saved !== undefined) {
    // The tables of a saved run, regenerated (after a change to how they are written).
    const reports = saved
      .split(',')
      .map((file) => JSON.parse(readFileSync(file, 'utf8')) as Record<string, any>);
    const md = await writeTables(combine(reports));
    log(`Rewrote bench/results/latest.md and latest.svg from ${saved}`);
    process.stdout.write(md.slice(md.indexOf('## Targets')));
    return;
  }
  const selected = WORKLOADS.filter((w) => (only.length === 0 ? !w.optIn : only.includes(w.name)));
  const started = new Date();
  const report: Record<string, any> = {
    startedAt: started.toISOString(),
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    quick,
    machine: await describeMachine(),
    versions: libraryVersions(),
    settings: SETTINGS,
    workloads: {} as Record<string, unknown>,
  };
  const ctx: RunContext = {
    quick,
    size: (full, small) => (quick ? small : full),
    database: (part) => `bench_${part}`.toLowerCase(),
    previous: report.workloads,
  };
  for (const [i, w] of selected.entries()) {
    log(`\n▶ [${i + 1}/${selected.length}] ${w.title}`);
    const t = Date.now();
    try {
      report.workloads[w.name] = await w.run(ctx);
    } catch (error) {
      const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
      log(`  ${w.name} failed: ${message}`);
      report.workloads[w.name] = { failed: message.split('\n')[0] };
    }
    log(`  done in ${Math.round((Date.now() - t) / 1000)} s`);
  }
  report.finishedAt = new Date().toISOString();
  report.durationSeconds = Math.round((Date.now() - started.getTime()) / 1000);
  const verdicts = judge(report.workloads);
  report.targets = verdicts;

  mkdirSync(RESULTS_DIR, { recursive: true });
  const stamp = started.toISOString().replace(/[:.]/g, '-');
  writeFileSync(`${RESULTS_DIR}${stamp}.json`, JSON.stringify(report, null, 2) + '\n');
  const md = await writeTables(report);
  log(
    `\nWrote bench/results/${stamp}.json, latest.md, latest.svg in ${Math.round(report.durationSeconds / 60)} min`,
  );
  process.stdout.write(md.slice(md.indexOf('## Targets')));
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
