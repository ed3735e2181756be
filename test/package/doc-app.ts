import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  NEST_NEW_DEPS,
  NEST_NEW_DEV_DEPS_LOCKED,
  NEST_NEW_DEV_DEPS_PINNED,
  NEST_NEW_FILES,
  NEST_NEW_SCRIPTS,
} from './nest-new-app.js';
import { captionedFiles, installLines, withinRange } from './readme-setup.js';
import { lockedVersion, npmInstall, pack, pkgDir, run, type Step } from './tarball.js';

// A `nest new` app (CLI 12, Vitest, TypeScript 6) built from one docs page
// of the package to the letter: its install lines, the files it shows under
// a caption, and its shell commands that set up the database, then its e2e
// tests, twice on one database. Nothing else from this repository reaches
// the app but the tarball.

export interface DocApp {
  dir: string;
  steps: Partial<Record<'install' | 'tsc' | 'setup' | 'e2e' | 'e2eAgain', Step>>;
}

/** The page's shell lines that `setup` names (its createdb and export are the test's own). */
export function setupCommands(page: string, setup: RegExp): string[] {
  const lines: string[] = [];
  for (const [, block] of page.matchAll(/```bash\n([\s\S]*?)```/g))
    for (const line of block.split('\n')) if (setup.test(line.trim())) lines.push(line.trim());
  return lines;
}

export function buildDocApp(
  page: string,
  name: string,
  databaseUrl: string,
  setup: RegExp,
): DocApp {
  const pkgVersion: string = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')).version;
  const { tarball, work } = pack();
  const dir = join(work, name);
  const steps: DocApp['steps'] = {};
  const dependencies: Record<string, string> = {};
  const devDependencies: Record<string, string> = { ...NEST_NEW_DEV_DEPS_PINNED };
  for (const dep of NEST_NEW_DEPS) dependencies[dep] = lockedVersion(dep);
  for (const dep of NEST_NEW_DEV_DEPS_LOCKED) devDependencies[dep] = lockedVersion(dep);
  for (const { name: dep, range, dev } of installLines(page)) {
    if (dep === 'nest-delay') {
      if (range !== pkgVersion)
        throw new Error(`the page installs nest-delay-${range}.tgz; npm pack writes ${pkgVersion}`);
      dependencies[dep] = `file:${tarball}`;
      continue;
    }
    const version = lockedVersion(dep);
    if (!withinRange(version, range))
      throw new Error(`the page installs ${dep}@${range}; the repo tests ${version}`);
    (dev ? devDependencies : dependencies)[dep] = version;
  }
  const files = new Map(Object.entries(NEST_NEW_FILES));
  for (const [file, text] of captionedFiles(page)) files.set(file, text);
  for (const [file, text] of files) {
    mkdirSync(join(dir, dirname(file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  const pkg = { name, version: '0.0.1', private: true, type: 'module', scripts: NEST_NEW_SCRIPTS };
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ ...pkg, dependencies, devDependencies }, null, 2),
  );

  steps.install = npmInstall(dir);
  if (!steps.install.ok) return { dir, steps };
  // In a bare environment, as the page runs its commands after its export.
  const env = {
    PATH: `${join(dir, 'node_modules/.bin')}:${process.env.PATH ?? ''}`,
    HOME: process.env.HOME ?? '',
    NO_COLOR: '1',
    DATABASE_URL: databaseUrl,
  };
  steps.setup = run('setup', 'sh', ['-ec', setupCommands(page, setup).join('\n')], {
    cwd: dir,
    env,
    timeout: 120_000,
  });
  if (!steps.setup.ok) return { dir, steps };
  const tsc = join(dir, 'node_modules/typescript/bin/tsc');
  steps.tsc = run('tsc --noEmit', process.execPath, [tsc, '--noEmit'], {
    cwd: dir,
    timeout: 90_000,
  });
  const e2e = () =>
    run('npm run test:e2e', 'npm', ['run', 'test:e2e'], { cwd: dir, env, timeout: 120_000 });
  steps.e2e = e2e();
  steps.e2eAgain = e2e();
  return { dir, steps };
}
