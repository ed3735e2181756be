import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, normalize } from 'node:path';
import { describeWithServer } from '../support/test-database.js';
import { serverDatabase } from './server-database.js';
import {
  PG_PROBE_APP_DEPS,
  PROBE_APP_DEPS,
  pgProbeAppSources,
  probeAppSources,
} from './probe-app.js';
import { anchorsOf, relativeLinks } from './readme-setup.js';
import {
  cleanUp,
  expectOk,
  lockedVersion,
  npmInstall,
  pack,
  pkgDir,
  root,
  run,
  type Step,
} from './tarball.js';

// The rest of the suite runs the package from source through path mappings;
// only the packed tarball, installed where the workspace cannot be seen, shows
// what a user of the published package gets.

const TIMEOUT = 240_000;
const pkgJson = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));

afterAll(cleanUp);

const MUST_SHIP =
  'package.json README.md LICENSE CHANGELOG.md dist/index.js dist/index.d.ts dist/testing/index.js dist/internal.js docs/how-it-works.md dist/admin-module/index.js dist/admin-module/page/index.html dist/admin-module/page/admin.css dist/admin-module/page/main.js';

describe('nest-delay tarball contents', () => {
  // The package.json npm wrote into the tarball is the one users get.
  let files: string[];
  let shipped: { name: string; exports?: object; dependencies?: object; peerDependencies?: object };
  beforeAll(() => {
    files = pack().files;
    shipped = JSON.parse(readFileSync(join(pack().unpacked, 'package.json'), 'utf8'));
  }, TIMEOUT + 90_000);

  it.each(MUST_SHIP.split(' '))('contains %s', (file) => {
    expect(files).toContain(file);
  });

  it('has every exports target in the tarball', () => {
    const targets: string[] = [];
    const collect = (value: unknown): void => {
      if (typeof value === 'string') targets.push(value.replace(/^\.\//, ''));
      else if (value && typeof value === 'object') Object.values(value).forEach(collect);
    };
    collect(shipped.exports);
    expect(targets.length).toBeGreaterThan(0);
    expect(targets.filter((t) => !files.includes(t))).toEqual([]);
  });

  it('imports only builtins and declared dependencies or peers from dist', () => {
    // Its own name too: a self-reference resolves through its own exports.
    const declared = [
      shipped.name,
      ...Object.keys({ ...shipped.dependencies, ...shipped.peerDependencies }),
    ];
    // .d.ts too: a type import of an undeclared package breaks the user's type-check.
    const code = files.filter((f) => f.startsWith('dist/') && /\.(d\.ts|js)$/.test(f));
    expect(code.length).toBeGreaterThan(0);
    const undeclared: string[] = [];
    for (const file of code) {
      const source = readFileSync(join(pack().unpacked, file), 'utf8');
      for (const [, spec] of source.matchAll(
        /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g,
      )) {
        if (spec.startsWith('.') || spec.startsWith('node:')) continue;
        const name = spec.match(/^(@[^/]+\/)?[^/]+/)![0];
        if (!builtinModules.includes(name) && !declared.includes(name))
          undeclared.push(`${file}: ${spec}`);
      }
    }
    expect(undeclared).toEqual([]);
  });

  // The README's pages ship with it: a link that leaves the package or names
  // a heading that is gone is a dead end for whoever reads it in node_modules.
  it('links its markdown pages only to files and headings inside the tarball', () => {
    const { unpacked } = pack();
    const pages = files.filter((f) => f.endsWith('.md'));
    const dead: string[] = [];
    for (const page of pages) {
      const text = readFileSync(join(unpacked, page), 'utf8');
      for (const [path, anchor] of relativeLinks(text)) {
        const target = path === '' ? page : normalize(join(dirname(page), path));
        const where = `${page} → ${path}${anchor ? `#${anchor}` : ''}`;
        if (target.startsWith('..') || !existsSync(join(unpacked, target))) dead.push(where);
        else if (
          anchor &&
          !anchorsOf(readFileSync(join(unpacked, target), 'utf8')).includes(anchor)
        )
          dead.push(`${where} (no such heading)`);
      }
    }
    expect(pages).toEqual(expect.arrayContaining(['README.md', 'docs/how-it-works.md']));
    expect(dead).toEqual([]);
  });
});

describeWithServer('nest-delay installed from its tarball into a foreign Nest app', () => {
  // Built in beforeAll: without a server this body still runs, to collect the skipped tests.
  let db: Awaited<ReturnType<typeof serverDatabase>>;
  const steps: Partial<Record<'install' | 'tsc' | 'app', Step>> = {};
  let appDir: string;

  // One pipeline, each step recorded: a failing step is reported by its own test.
  beforeAll(async () => {
    db = await serverDatabase('pk');
    const { tarball, work } = pack();
    appDir = join(work, 'app');
    mkdirSync(join(appDir, 'src'), { recursive: true });
    const dependencies: Record<string, string> = { 'nest-delay': `file:${tarball}` };
    for (const name of PROBE_APP_DEPS) dependencies[name] = lockedVersion(name);
    const pkg = { name: 'probe-app', private: true, type: 'module', dependencies };
    writeFileSync(join(appDir, 'package.json'), JSON.stringify(pkg, null, 2));
    for (const [file, text] of Object.entries(probeAppSources(root)))
      writeFileSync(join(appDir, file), text);

    steps.install = npmInstall(appDir);
    if (!steps.install.ok) return;
    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    steps.tsc = run('tsc', process.execPath, [tsc, '-p', join(appDir, 'tsconfig.json')], {
      timeout: 60_000,
    });
    if (!steps.tsc.ok) return;
    // A bare environment: nothing from the test process (or npm) leaks into the app.
    const env = { PATH: process.env.PATH ?? '', NO_COLOR: '1', DATABASE_URL: db.url };
    steps.app = run('probe app', process.execPath, ['dist/main.js'], {
      cwd: appDir,
      env,
      timeout: 45_000,
    });
  }, TIMEOUT + 90_000);

  afterAll(() => db?.drop());

  it('installs the tarball, not the workspace or a registry copy', () => {
    expectOk(steps.install, 'npm install');
    const lockfile = JSON.parse(readFileSync(join(appDir, 'package-lock.json'), 'utf8'));
    expect(lockfile.packages['node_modules/nest-delay']).toMatchObject({
      version: pkgJson.version,
      resolved: expect.stringMatching(/^file:.*\.tgz$/),
    });
  });

  it("type-checks and compiles against the installed package's types and exports", () => {
    expectOk(steps.tsc, 'tsc');
  });

  it('runs a delayed task exactly once and exits by itself', () => {
    expectOk(steps.app, 'probe app');
    const line = steps.app.output.split('\n').find((l) => l.startsWith('{"effects"'));
    if (!line) throw new Error(`no result line\n${steps.app.detail}`);
    try {
      expect(JSON.parse(line)).toEqual({ effects: 1, state: 'executed' });
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${steps.app.detail}`, { cause: error });
    }
  });

  it('runs without @opentelemetry/api, an optional peer npm does not install', () => {
    expectOk(steps.app, 'probe app');
    expect(existsSync(join(appDir, 'node_modules/@opentelemetry/api'))).toBe(false);
    expect(pkgJson.peerDependenciesMeta['@opentelemetry/api']).toEqual({ optional: true });
  });

  it("ran the package's migrations in the app's own DataSource", async () => {
    expectOk(steps.app, 'probe app');
    const sql = `SELECT to_regclass('delayed_task')::text AS t, array(SELECT name FROM migrations) AS names`;
    const [row] = await db.query(sql);
    expect(row.t).toBe('delayed_task');
    expect(row.names).toContainEqual(expect.stringMatching(/^CreateDelayedTask/));
  });
});

describeWithServer('nest-delay installed from its tarball into a Nest app without TypeORM', () => {
  let db: Awaited<ReturnType<typeof serverDatabase>>;
  const steps: Partial<Record<'install' | 'tsc' | 'migrate' | 'app', Step>> = {};
  let appDir: string;

  beforeAll(async () => {
    db = await serverDatabase('pg');
    const { tarball, work } = pack();
    appDir = join(work, 'pg-app');
    mkdirSync(join(appDir, 'src'), { recursive: true });
    const dependencies: Record<string, string> = { 'nest-delay': `file:${tarball}` };
    for (const name of PG_PROBE_APP_DEPS) dependencies[name] = lockedVersion(name);
    const pkg = { name: 'pg-probe-app', private: true, type: 'module', dependencies };
    writeFileSync(join(appDir, 'package.json'), JSON.stringify(pkg, null, 2));
    for (const [file, text] of Object.entries(pgProbeAppSources(root)))
      writeFileSync(join(appDir, file), text);
    steps.install = npmInstall(appDir);
    if (!steps.install.ok) return;
    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    steps.tsc = run('tsc', process.execPath, [tsc, '-p', join(appDir, 'tsconfig.json')], {
      timeout: 60_000,
    });
    if (!steps.tsc.ok) return;
    const env = { PATH: process.env.PATH ?? '', NO_COLOR: '1', DATABASE_URL: db.url };
    // What the docs tell a user to run: the package's bin, as npx finds it.
    steps.migrate = run(
      'nest-delay migrate',
      join(appDir, 'node_modules/.bin/nest-delay'),
      ['migrate'],
      {
        cwd: appDir,
        env,
        timeout: 45_000,
      },
    );
    if (!steps.migrate.ok) return;
    steps.app = run('pg probe app', process.execPath, ['dist/main.js'], {
      cwd: appDir,
      env,
      timeout: 45_000,
    });
  }, TIMEOUT + 90_000);

  afterAll(() => db?.drop());

  it('installs with neither typeorm nor @nestjs/typeorm, optional peers', () => {
    expectOk(steps.install, 'npm install');
    expect(existsSync(join(appDir, 'node_modules/typeorm'))).toBe(false);
    expect(existsSync(join(appDir, 'node_modules/@nestjs/typeorm'))).toBe(false);
    expect(pkgJson.peerDependenciesMeta.typeorm).toEqual({ optional: true });
    expect(pkgJson.peerDependenciesMeta['@nestjs/typeorm']).toEqual({ optional: true });
  });

  it('type-checks against the installed types without TypeORM', () => {
    expectOk(steps.tsc, 'tsc');
  });

  it('migrates with `nest-delay migrate`, recording each migration in delay_migrations', async () => {
    expectOk(steps.migrate, 'nest-delay migrate');
    expect(steps.migrate.output).toMatch(/ran \d+: CreateDelayedTask1763800000000/);
    const [row] = await db.query(`SELECT count(*)::int AS n FROM delay_migrations`);
    expect(row.n).toBeGreaterThan(10);
  });

  it('schedules in its own pg transaction and runs the task exactly once, its effect through the claim', () => {
    expectOk(steps.app, 'pg probe app');
    const line = steps.app.output.split('\n').find((l) => l.startsWith('{"effects"'));
    if (!line) throw new Error(`no result line\n${steps.app.detail}`);
    expect(JSON.parse(line)).toEqual({ effects: 1, state: 'executed' });
  });
});
