import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describeWithServer } from '../support/test-database.js';
import {
  NEST_NEW_DEPS,
  NEST_NEW_DEV_DEPS_LOCKED,
  NEST_NEW_DEV_DEPS_PINNED,
  NEST_NEW_FILES,
  NEST_NEW_SCRIPTS,
} from './nest-new-app.js';
import { captionedFiles, installLines, withinRange } from './readme-setup.js';
import { serverDatabase } from './server-database.js';
import {
  cleanUp,
  expectOk,
  lockedVersion,
  npmInstall,
  pack,
  pkgDir,
  run,
  type Step,
} from './tarball.js';

// A `nest new` app (CLI 12, Vitest, TypeScript 6) on Drizzle with no
// TypeORM, built from docs/drizzle-app.md to the letter: its install lines,
// the files it shows, and its commands (the engine's migrations with the
// package's bin, the orders table with psql), then its e2e test, twice on
// one database. Nothing else from this repository reaches the app but the tarball.

const TIMEOUT = 300_000;
const page = readFileSync(join(pkgDir, 'docs/drizzle-app.md'), 'utf8');
const pkgVersion: string = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')).version;

afterAll(cleanUp);

/** The page's shell lines that set up the database (createdb and export are the test's own). */
function setupCommands(): string[] {
  const lines: string[] = [];
  for (const [, block] of page.matchAll(/```bash\n([\s\S]*?)```/g))
    for (const line of block.split('\n'))
      if (/^(npx nest-delay|psql) /.test(line.trim())) lines.push(line.trim());
  return lines;
}

describeWithServer('a `nest new` app on Drizzle, no TypeORM, following docs/drizzle-app.md', () => {
  let db: Awaited<ReturnType<typeof serverDatabase>>;
  let appDir: string;
  const steps: Partial<Record<'install' | 'tsc' | 'setup' | 'e2e' | 'e2eAgain', Step>> = {};

  beforeAll(async () => {
    db = await serverDatabase('dz');
    const { tarball, work } = pack();
    appDir = join(work, 'drizzle-app');
    const dependencies: Record<string, string> = {};
    const devDependencies: Record<string, string> = { ...NEST_NEW_DEV_DEPS_PINNED };
    for (const name of NEST_NEW_DEPS) dependencies[name] = lockedVersion(name);
    for (const name of NEST_NEW_DEV_DEPS_LOCKED) devDependencies[name] = lockedVersion(name);
    for (const { name, range, dev } of installLines(page)) {
      if (name === 'nest-delay') {
        if (range !== pkgVersion)
          throw new Error(
            `the page installs nest-delay-${range}.tgz; npm pack writes ${pkgVersion}`,
          );
        dependencies[name] = `file:${tarball}`;
        continue;
      }
      const version = lockedVersion(name);
      if (!withinRange(version, range))
        throw new Error(`the page installs ${name}@${range}; the repo tests ${version}`);
      (dev ? devDependencies : dependencies)[name] = version;
    }
    const files = new Map(Object.entries(NEST_NEW_FILES));
    for (const [file, text] of captionedFiles(page)) files.set(file, text);
    for (const [file, text] of files) {
      mkdirSync(join(appDir, dirname(file)), { recursive: true });
      writeFileSync(join(appDir, file), text);
    }
    const pkg = {
      name: 'drizzle-demo',
      version: '0.0.1',
      private: true,
      type: 'module',
      scripts: NEST_NEW_SCRIPTS,
      dependencies,
      devDependencies,
    };
    writeFileSync(join(appDir, 'package.json'), JSON.stringify(pkg, null, 2));

    steps.install = npmInstall(appDir);
    if (!steps.install.ok) return;
    const tsc = join(appDir, 'node_modules/typescript/bin/tsc');
    steps.tsc = run('tsc --noEmit', process.execPath, [tsc, '--noEmit'], {
      cwd: appDir,
      timeout: 90_000,
    });
    // In a bare environment, as the page runs them after its export.
    const env = {
      PATH: `${join(appDir, 'node_modules/.bin')}:${process.env.PATH ?? ''}`,
      HOME: process.env.HOME ?? '',
      NO_COLOR: '1',
      DATABASE_URL: db.url,
    };
    steps.setup = run('setup', 'sh', ['-ec', setupCommands().join('\n')], {
      cwd: appDir,
      env,
      timeout: 90_000,
    });
    if (!steps.setup.ok) return;
    const e2e = () =>
      run('npm run test:e2e', 'npm', ['run', 'test:e2e'], { cwd: appDir, env, timeout: 120_000 });
    steps.e2e = e2e();
    steps.e2eAgain = e2e();
  }, TIMEOUT);

  afterAll(() => db?.drop());

  it('installs without TypeORM', () => {
    expectOk(steps.install, 'npm install');
    expect(
      Object.keys(JSON.parse(readFileSync(join(appDir, 'package.json'), 'utf8')).dependencies),
    ).not.toContain('typeorm');
  });

  it("type-checks with the scaffold's tsconfig", () => {
    expectOk(steps.tsc, 'tsc --noEmit');
  });

  it("creates the tables with the page's commands: the package's bin, then psql", async () => {
    expect(setupCommands()).toEqual([
      'npx nest-delay migrate',
      expect.stringMatching(/^psql "\$DATABASE_URL" -c "CREATE TABLE orders/),
    ]);
    expectOk(steps.setup, 'setup');
    const [row] = await db.query(
      `SELECT to_regclass('delayed_task')::text AS engine, to_regclass('orders')::text AS orders`,
    );
    expect(row).toEqual({ engine: 'delayed_task', orders: 'orders' });
  });

  it("passes the page's e2e test and the scaffold's, twice on one database: scheduled in Drizzle's transaction, closed through the claim's", async () => {
    for (const step of [steps.e2e, steps.e2eAgain]) {
      expectOk(step, 'npm run test:e2e');
      expect(step.output).toMatch(/Tests\s+2 passed \(2\)/);
    }
    const closed = await db.query(`SELECT count(*)::int AS n FROM orders WHERE status = 'CLOSED'`);
    expect(closed[0].n).toBe(2);
  });
});
