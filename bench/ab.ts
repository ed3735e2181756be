/**
 * `npm run bench:ab -- <before> [<after>] [--rounds N] [--quick] [--only burst,spread,steady,limits]`:
 * two engine builds in alternating rounds (ABBA…) on fresh databases, the
 * before/after bench of issue 41. `after` defaults to this working tree (as
 * built by the npm script); a commit is built from git by the rolling-deploy
 * test's helper (test/support/previous-release.ts). This tree's compiled
 * bench (dist/bench) is copied into each build's `.bench-ab/`, so both run
 * the same bytes and only the engine (and what it resolves there) differs:
 * - burst: 10,000 tasks due at one instant (ab-build.ts);
 * - spread: 3,000 due evenly over 60 s (ab-build.ts);
 * - steady: bench:long's clean phase, 2,000 tasks/s for 120 s with 1,000,000
 *   pending, on its own cluster; its floor once a round beside them;
 * - limits: bench:limits' burst part (20,000 tasks, one round a build).
 * Prints each figure's medians and the ratio after/before (ab-table.ts) and
 * writes bench/results/ab-<timestamp>.json.
 */
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { buildPreviousRelease } from '../test/support/previous-release.js';
import { startCluster, type Cluster } from './long/cluster.js';
import { compare, markdown, type FigureDef, type Row, type RoundFigures } from './ab-table.js';

const ROOT = resolve('.');
const STEPS = ['burst', 'spread', 'steady', 'limits'] as const;
type Step = (typeof STEPS)[number];
type Figures = Record<string, number | null>;
const LIMITS = ['none', 'typeModule', 'type4', 'perKey', 'rate'] as const;

interface Build {
  name: 'before' | 'after';
  ref: string;
  commit: string;
  dir: string;
  /** The engine's package version in that tree. */
  engine: string;
}

const args = process.argv.slice(2);
const option = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const quick = args.includes('--quick');
const rounds = Number(option('--rounds') ?? 2);
const only = (option('--only')?.split(',') ?? [...STEPS]) as Step[];
const positional = args.filter(
  (a, i) => !a.startsWith('--') && !['--rounds', '--only'].includes(args[i - 1]),
);
if (positional.length < 1 || only.some((s) => !STEPS.includes(s)) || !(rounds >= 1))
  throw new Error(
    'usage: bench:ab -- <before> [<after>] [--rounds N] [--quick] [--only burst,spread,steady,limits]',
  );

const git = (...a: string[]) => execFileSync('git', a, { cwd: ROOT, encoding: 'utf8' }).trim();
const log = (line: string) => process.stderr.write(`[ab ${new Date().toISOString()}] ${line}\n`);

async function prepare(name: Build['name'], ref: string | undefined): Promise<Build> {
  let build: Build;
  if (ref === undefined || ref === '.') {
    const dirty = git('status', '--porcelain', '--untracked-files=no') !== '';
    build = {
      name,
      ref: 'working tree',
      commit: git('rev-parse', 'HEAD') + (dirty ? '+' : ''),
      dir: ROOT,
      engine: '',
    };
  } else {
    const commit = git('rev-parse', '--verify', `${ref}^{commit}`);
    log(`${name}: building ${commit} (npm ci or linked node_modules, npm run build)`);
    build = { name, ref, commit, dir: await buildPreviousRelease(commit), engine: '' };
  }
  const manifest = join(build.dir, 'packages', 'nest-delay', 'package.json');
  build.engine = (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
  const target = join(build.dir, '.bench-ab');
  rmSync(join(target, 'dist'), { recursive: true, force: true });
  cpSync(join(ROOT, 'dist', 'bench'), join(target, 'dist', 'bench'), { recursive: true });
  writeFileSync(join(target, 'package.json'), '{ "type": "module" }\n');
  return build;
}

/** Runs one copied script in a build's tree; its stdout, its progress on our stderr. */
function run(build: Build, script: string, argv: string[], node: string[] = []): Promise<string> {
  const entry = join(build.dir, '.bench-ab', 'dist', 'bench', 'bench', script);
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [...node, entry, ...argv], {
      cwd: build.dir,
      env: { ...process.env, BENCH_DATABASE_URL: server!.url },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', fail);
    child.on('exit', (code) =>
      code === 0
        ? done(out)
        : fail(new Error(`${build.name}: ${script} exited ${code}\n${out.slice(-2000)}`)),
    );
  });
}

/** The JSON a script wrote to `.bench-ab/bench/results/` (its files named `<prefix><timestamp>.json`). */
async function written(build: Build, prefix: string, go: () => Promise<string>): Promise<any> {
  const dir = join(build.dir, '.bench-ab', 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const listing = () => readdirSync(dir).filter((f) => f.startsWith(prefix) && /Z\.json$/.test(f));
  const before = new Set(listing());
  await go();
  const file = listing().find((f) => !before.has(f));
  if (!file) throw new Error(`${build.name}: no ${prefix}*.json written in ${dir}`);
  return JSON.parse(readFileSync(join(dir, file), 'utf8'));
}

const lastJson = (out: string) => JSON.parse(out.trim().split('\n').pop()!);

const COUNTS = { burst: quick ? 1_000 : 10_000, spread: quick ? 300 : 3_000 };

async function dueTasks(build: Build, mode: 'burst' | 'spread'): Promise<any> {
  return lastJson(await run(build, 'ab-build.js', [mode, String(COUNTS[mode])]));
}

const steadyArgs = quick
  ? ['--rate', '200', '--pending', '10000', '--phase-seconds', '10', '--ahead-seconds', '5']
  : ['--rate', '2000', '--pending', '1000000', '--phase-seconds', '120', '--ahead-seconds', '30'];

/** bench:long's clean phase for one system; the phase's record and the ledger. */
async function steady(build: Build, system: 'nest-delay' | 'floor'): Promise<any> {
  const saved = await written(build, 'long-', () =>
    run(build, 'long/long.js', ['--systems', system, '--phases', 'clean', ...steadyArgs]),
  );
  const s = saved.systems[0];
  return { phase: s.phases[0], ledger: s.ledger, loadSeconds: s.loadSeconds };
}

async function limits(build: Build): Promise<any> {
  return written(build, 'limits-', () =>
    run(
      build,
      'limits-cost.js',
      quick ? ['--quick', '--only', 'burst'] : ['20000', '1', '--only', 'burst'],
      ['--expose-gc'],
    ),
  );
}

/** The figures compared, from one build's results of one round. */
function figuresOf(r: Record<string, any>, floor: any): Figures {
  const f: Figures = {};
  if (r.burst) {
    f.burstDrain = r.burst.drainMs;
    f.burstCpu = r.burst.cpuUsPerTask;
    f.burstServer = r.burst.serverUsPerTask;
  }
  if (r.spread) {
    f.spreadP50 = r.spread.lateness?.p50 ?? null;
    f.spreadP99 = r.spread.lateness?.p99 ?? null;
    f.spreadMax = r.spread.lateness?.max ?? null;
  }
  if (r.steady) {
    const p = r.steady.phase;
    f.steadyP50 = p.lateness?.p50 ?? null;
    f.steadyP99 = p.lateness?.p99 ?? null;
    f.steadyCpu = Math.round((p.cpuMsPerEffect + (p.postgresCpuMsPerEffect ?? 0)) * 1000);
    const floorCpu =
      floor && floor.phase.cpuMsPerEffect + (floor.phase.postgresCpuMsPerEffect ?? 0);
    f.steadyCpuOverFloor = floorCpu ? f.steadyCpu / 1000 / floorCpu : null;
  }
  if (r.limits)
    for (const s of r.limits.burst.summary) {
      f[`limits_${s.limit}_eps`] = s.effectsPerSecond;
      f[`limits_${s.limit}_cpu`] = s.processCpuUsPerTask + (s.backendCpuUsPerTask ?? 0);
    }
  return f;
}

const DEFS: FigureDef[] = [
  { key: 'burstDrain', label: 'burst drain ms', better: 'lower' },
  { key: 'burstCpu', label: 'burst CPU µs/task, process', better: 'lower' },
  { key: 'burstServer', label: 'burst CPU µs/task, Postgres backends', better: 'lower' },
  { key: 'spreadP50', label: 'spread lateness p50 ms', better: 'lower' },
  { key: 'spreadP99', label: 'spread lateness p99 ms', better: 'lower' },
  { key: 'spreadMax', label: 'spread lateness max ms', better: 'lower' },
  { key: 'steadyP50', label: 'steady lateness p50 ms', better: 'lower' },
  { key: 'steadyP99', label: 'steady lateness p99 ms', better: 'lower' },
  { key: 'steadyCpu', label: 'steady CPU µs/task, instances + Postgres', better: 'lower' },
  { key: 'steadyCpuOverFloor', label: "steady CPU/task ÷ the round's floor", better: 'lower' },
  ...LIMITS.flatMap((l): FigureDef[] => [
    { key: `limits_${l}_eps`, label: `limits ${l}: effects/s`, better: 'higher' },
    {
      key: `limits_${l}_cpu`,
      label: `limits ${l}: CPU µs/task, process + backends`,
      better: 'lower',
    },
  ]),
];

/** What must hold whatever the timing: each task's effect once, none early. */
function faults(r: Record<string, any>): string[] {
  const out: string[] = [];
  for (const k of ['burst', 'spread'] as const)
    if (r[k] && (r[k].missing || r[k].duplicates || r[k].capped || (r[k].lateness?.min ?? 0) < 0))
      out.push(
        `${k}: missing ${r[k].missing}, duplicates ${r[k].duplicates}, min ${r[k].lateness?.min}${r[k].capped ? ', capped' : ''}`,
      );
  if (r.steady && !r.steady.ledger.ok) out.push(`steady ledger ${JSON.stringify(r.steady.ledger)}`);
  for (const s of r.limits?.burst.summary ?? [])
    if (s.missing || s.duplicates)
      out.push(`limits ${s.limit}: missing ${s.missing}, duplicates ${s.duplicates}`);
  return out;
}

/** The table of the rounds done so far, printed with the load of each round. */
function summary(done: any[], before: Build, after: Build): { rows: Row[]; text: string } {
  const rows = compare(
    DEFS.filter((d) => done.some((r) => r.figures.before[d.key] !== undefined)),
    done.map((r) => r.figures),
  );
  const floors = done
    .filter((r) => r.floor)
    .map((r) => {
      const p = r.floor.phase;
      return `round ${r.round}: p50 ${p.lateness?.p50} / p99 ${p.lateness?.p99} ms, ${Math.round((p.cpuMsPerEffect + (p.postgresCpuMsPerEffect ?? 0)) * 1000)} µs/task`;
    });
  const text = [
    `bench:ab ${quick ? '(--quick: a smoke test, not figures) ' : ''}before ${before.ref} = ${before.commit} (nest-delay ${before.engine}), after ${after.ref} = ${after.commit} (nest-delay ${after.engine}), ${done.length} of ${rounds} round(s), ${process.version}`,
    '',
    markdown(rows),
    '',
    ...(floors.length ? [`Steady floor: ${floors.join('; ')}.`] : []),
    ...done.map(
      (r) => `Round ${r.round} (${r.order.join(' first, ')}): ${r.uptimeBefore} → ${r.uptimeAfter}`,
    ),
    ...done.flatMap((r) =>
      (['before', 'after'] as const).flatMap((b) =>
        r.faults[b].map((f: string) => `FAULT round ${r.round} ${b}: ${f}`),
      ),
    ),
  ].join('\n');
  return { rows, text };
}

/**
 * burst, spread and limits run on a Postgres of this run's own (bench:long's
 * cluster; steady starts its own): a shared server's other benches create and
 * drop the same bench_* databases, and one's DROP … WITH (FORCE) ends another's run.
 */
let server: Cluster | undefined;

/** A step again once when it fails (a run is long; one lost connection should not end it). */
async function twice<T>(what: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    log(`${what} failed, once more: ${(error as Error).message.split('\n')[0]}`);
    return step();
  }
}

async function main(): Promise<void> {
  const startedAt = new Date();
  server = await startCluster();
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.on(signal, () => {
      server?.destroy();
      process.exit(1);
    });
  const before = await prepare('before', positional[0]);
  const after = await prepare('after', positional[1]);
  for (const b of [before, after])
    log(`${b.name}: ${b.commit}, nest-delay ${b.engine}, in ${b.dir}`);
  const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `ab-${startedAt.toISOString().replace(/[:.]/g, '-')}.json`);
  const done: any[] = [];
  for (let i = 0; i < rounds; i++) {
    const order = i % 2 === 0 ? [before, after] : [after, before];
    const round: any = { round: i + 1, order: order.map((b) => b.name), uptimeBefore: uptime() };
    const results: Record<string, Record<string, any>> = { before: {}, after: {} };
    for (const step of only) {
      if (step === 'steady') {
        log(`round ${i + 1}: steady, the floor`);
        round.floor = await twice(`round ${i + 1} steady floor`, () => steady(after, 'floor'));
      }
      for (const build of order) {
        log(`round ${i + 1}: ${step}, ${build.name}`);
        results[build.name][step] = await twice(`round ${i + 1} ${step} ${build.name}`, () =>
          step === 'burst' || step === 'spread'
            ? dueTasks(build, step)
            : step === 'steady'
              ? steady(build, 'nest-delay')
              : limits(build),
        );
      }
    }
    round.uptimeAfter = uptime();
    round.results = results;
    round.figures = {
      before: figuresOf(results.before, round.floor),
      after: figuresOf(results.after, round.floor),
    } satisfies RoundFigures;
    round.faults = { before: faults(results.before), after: faults(results.after) };
    done.push(round);
    const { rows, text } = summary(done, before, after);
    // Rewritten after every round: a run stopped early keeps the rounds it finished.
    writeFileSync(
      file,
      `${JSON.stringify(
        {
          startedAt: startedAt.toISOString(),
          finishedAt: new Date().toISOString(),
          argv: args,
          quick,
          machine: { cpus: os.cpus().length, node: process.version },
          before,
          after,
          steadyArgs,
          rounds: done,
          rows,
        },
        null,
        2,
      )}\n`,
    );
    log(`round ${i + 1} done, ${file} written:\n${text}`);
    if (i === rounds - 1) console.log(text);
  }
}

main().then(
  () => {
    server?.destroy();
    process.exit(0);
  },
  (error: Error) => {
    server?.destroy();
    console.error(error.stack ?? error.message);
    process.exit(1);
  },
);
