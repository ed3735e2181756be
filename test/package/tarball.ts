import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Packing nest-delay and installing it where the workspace cannot be seen:
// the helpers of the pack-install test.

export const root = fileURLToPath(new URL('../../', import.meta.url));
export const pkgDir = join(root, 'packages/nest-delay');

/** `detail`: how it ended and the tail of its output, for a failure message. */
export type Step = { ok: boolean; output: string; detail: string };

// What an outer `npm test -w x` exports (workspace, lifecycle) must not steer the
// nested npm; its config (cache, registry, userconfig) still applies.
export const npmEnv = Object.fromEntries(
  Object.entries(process.env).filter(
    ([k]) => !/^npm_(?!config_)|^npm_config_workspaces?$/i.test(k),
  ),
);

export function run(label: string, cmd: string, args: string[], opts: SpawnSyncOptions): Step {
  // SIGKILL on timeout: a process that does not exit must not hold the suite up.
  const r = spawnSync(cmd, args, { env: npmEnv, ...opts, encoding: 'utf8', killSignal: 'SIGKILL' });
  const output = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  const how = r.error
    ? `failed (${r.error.message}, limit ${opts.timeout} ms)`
    : `exited ${r.status ?? r.signal}`;
  const detail = `${label} ${how}\n--- output tail ---\n${output.slice(-4000)}`;
  return { ok: !r.error && r.status === 0, output, detail };
}

export function expectOk(step: Step | undefined, what: string): asserts step is Step {
  if (!step) throw new Error(`${what}: not run, an earlier step failed (see that test)`);
  if (!step.ok) throw new Error(step.detail);
}

/** `npm install` in `dir`, from npm's cache where it can: the versions the repo's lockfile holds. */
export function npmInstall(dir: string): Step {
  const args = ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'];
  return run('npm install', 'npm', args, { cwd: dir, timeout: 150_000 });
}

const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));

/** The version of `name` the repo's lockfile installs (so npm finds it in its cache offline). */
export function lockedVersion(name: string): string {
  const entry = lock.packages[`node_modules/${name}`];
  if (!entry) throw new Error(`${name} is not in the repo's package-lock.json`);
  return entry.version;
}

export interface Packed {
  /** The temporary folder everything of this test goes in. */
  work: string;
  tarball: string;
  /** Its files, named as package.json names them. */
  files: string[];
  /** The tarball extracted: what the static checks read. */
  unpacked: string;
}

let packed: Packed | undefined;

/** Packs once per test file; `cleanUp` removes it all. */
export function pack(): Packed {
  if (packed) return packed;
  if (!existsSync(join(pkgDir, 'dist/index.js'))) {
    throw new Error(
      'packages/nest-delay/dist/index.js is missing: run `npm run build` first (npm test does it in pretest)',
    );
  }
  const work = mkdtempSync(join(tmpdir(), 'nest-delay-pack-'));
  const dest = join(work, 'pack');
  mkdirSync(dest);
  // --ignore-scripts: prepack would rebuild dist under tests that run it (pretest built it).
  const step = run('npm pack', 'npm', ['pack', '--ignore-scripts', '--pack-destination', dest], {
    cwd: pkgDir,
    timeout: 60_000,
  });
  expectOk(step, 'npm pack');
  const tgz = readdirSync(dest).find((f) => f.endsWith('.tgz'));
  if (!tgz) throw new Error(`npm pack wrote no .tgz\n${step.detail}`);
  const tarball = join(dest, tgz);
  expectOk(run('tar', 'tar', ['-xzf', tarball, '-C', dest], { timeout: 30_000 }), 'tar -xzf');
  // npm puts everything under package/.
  const unpacked = join(dest, 'package');
  const files = readdirSync(unpacked, { recursive: true, encoding: 'utf8' });
  packed = { work, tarball, files, unpacked };
  return packed;
}

export function cleanUp(): void {
  if (packed) rmSync(packed.work, { recursive: true, force: true });
}
