import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { describeWithServer, serverUrl } from '../support/test-database.js';

// The rest of the suite runs the package from source through path mappings;
// only the packed tarball, installed where the workspace cannot be seen, shows
// what a user of the published package gets.

const TIMEOUT = 240_000;
const root = fileURLToPath(new URL('../../', import.meta.url));
const pkgDir = join(root, 'packages/nest-delay');
const pkgJson = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));

/** `detail`: how it ended and the tail of its output, for a failure message. */
type Step = { ok: boolean; output: string; detail: string };

// What an outer `npm test -w x` exports (workspace, lifecycle) must not steer the
// nested npm; its config (cache, registry, userconfig) still applies.
const npmEnv = Object.fromEntries(
  Object.entries(process.env).filter(
    ([k]) => !/^npm_(?!config_)|^npm_config_workspaces?$/i.test(k),
  ),
);

function run(label: string, cmd: string, args: string[], opts: SpawnSyncOptions): Step {
  // SIGKILL on timeout: a process that does not exit must not hold the suite up.
  const r = spawnSync(cmd, args, { env: npmEnv, ...opts, encoding: 'utf8', killSignal: 'SIGKILL' });
  const output = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  const how = r.error
    ? `failed (${r.error.message}, limit ${opts.timeout} ms)`
    : `exited ${r.status ?? r.signal}`;
  const detail = `${label} ${how}\n--- output tail ---\n${output.slice(-4000)}`;
  return { ok: !r.error && r.status === 0, output, detail };
}

function expectOk(step: Step | undefined, what: string): asserts step is Step {
  if (!step) throw new Error(`${what}: not run, an earlier step failed (see that test)`);
  if (!step.ok) throw new Error(step.detail);
}

let work: string | undefined;
let packed: { tarball: string; files: string[]; unpacked: string } | undefined;

/** Packs once for both describes; the unpacked copy is what the static check reads. */
function pack(): NonNullable<typeof packed> {
  if (packed) return packed;
  if (!existsSync(join(pkgDir, 'dist/index.js'))) {
    throw new Error(
      'packages/nest-delay/dist/index.js is missing: run `npm run build` first (npm test does it in pretest)',
    );
  }
  work = mkdtempSync(join(tmpdir(), 'nest-delay-pack-'));
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
  // npm puts everything under package/; the list names files as package.json does.
  const unpacked = join(dest, 'package');
  const files = readdirSync(unpacked, { recursive: true, encoding: 'utf8' });
  packed = { tarball, files, unpacked };
  return packed;
}

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

const MUST_SHIP =
  'package.json README.md LICENSE CHANGELOG.md dist/index.js dist/index.d.ts dist/testing/index.js dist/internal.js';

describe('nest-delay tarball contents', () => {
  // The package.json npm wrote into the tarball is the one users get.
  let files: string[];
  let shipped: { name: string; exports?: object; dependencies?: object; peerDependencies?: object };
  beforeAll(() => {
    files = pack().files;
    shipped = JSON.parse(readFileSync(join(pack().unpacked, 'package.json'), 'utf8'));
  }, TIMEOUT);

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
});

const APP_DEPS = '@nestjs/common @nestjs/core @nestjs/typeorm typeorm pg reflect-metadata rxjs';

/** The foreign app, as a user would write it: nothing from this repo but the tarball. */
function appSources(): Record<string, string> {
  return {
    // Only Node's own types come from the repo: the app installs no @types/node.
    'tsconfig.json': `{
  "compilerOptions": {
    "target": "ES2022", "module": "NodeNext", "moduleResolution": "NodeNext", "lib": ["ES2023"],
    "strict": true, "experimentalDecorators": true, "emitDecoratorMetadata": true,
    "skipLibCheck": true, "rootDir": "src", "outDir": "dist",
    "typeRoots": [${JSON.stringify(join(root, 'node_modules/@types'))}], "types": ["node"]
  },
  "include": ["src"]
}`,
    'src/probe.handler.ts': `
import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { DelayedTaskHandler } from 'nest-delay';

@Injectable()
export class ProbeHandler {
  @DelayedTaskHandler('probe.ping')
  async ping(_payload: unknown, context: { manager: EntityManager; task: { id: string } }): Promise<void> {
    await context.manager.query('INSERT INTO probe_effect(task_id) VALUES ($1)', [context.task.id]);
  }
}
`,
    'src/app.module.ts': `
import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DelayModule, delayMigrations } from 'nest-delay';
import { ProbeHandler } from './probe.handler.js';

@Module({
  imports: [
    TypeOrmModule.forRoot({ type: 'postgres', url: process.env.DATABASE_URL, migrations: [...delayMigrations], migrationsRun: true, retryAttempts: 0 }),
    DelayModule.forRoot({ tickMs: 50 }),
  ],
  providers: [ProbeHandler],
})
export class AppModule {}
`,
    'src/main.ts': `
import 'reflect-metadata';
import { setTimeout as sleep } from 'node:timers/promises';
import { NestFactory } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { DelayService } from 'nest-delay';
import { AppModule } from './app.module.js';

const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
app.enableShutdownHooks();
const db = app.get(DataSource);
await db.query('CREATE TABLE IF NOT EXISTS probe_effect (task_id bigint NOT NULL)');
const delay = app.get(DelayService);
const task = await delay.schedule({ type: 'probe.ping', delay: 200 });
const effects = async (): Promise<number> => (await db.query('SELECT count(*)::int AS n FROM probe_effect'))[0].n;
const deadline = Date.now() + 20_000;
while ((await effects()) < 1 && Date.now() < deadline) await sleep(50);
// Long enough for a second, wrong run of the same task to show up.
await sleep(500);
const [row] = await db.query('SELECT executed_at FROM delayed_task WHERE id = $1', [task.id]);
console.log(JSON.stringify({ effects: await effects(), state: row?.executed_at ? 'executed' : 'not executed' }));
await app.close();
`,
  };
}

describeWithServer('nest-delay installed from its tarball into a foreign Nest app', () => {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
  const dbName = `pk_${randomBytes(4).toString('hex')}`;
  // Built in beforeAll: without a server this body still runs, to collect the skipped tests.
  let dbUrl: string;
  const steps: Partial<Record<'install' | 'tsc' | 'app', Step>> = {};
  let appDir: string;

  const admin = async <T>(fn: (c: pg.Client) => Promise<T>, url = serverUrl): Promise<T> => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  };

  // One pipeline, each step recorded: a failing step is reported by its own test.
  beforeAll(async () => {
    dbUrl = Object.assign(new URL(serverUrl!), { pathname: `/${dbName}` }).toString();
    await admin((c) => c.query(`CREATE DATABASE ${dbName}`));
    const { tarball } = pack();
    appDir = join(work!, 'app');
    mkdirSync(join(appDir, 'src'), { recursive: true });
    // Versions the repo already locks, so npm finds them in its cache offline.
    const dependencies: Record<string, string> = { 'nest-delay': `file:${tarball}` };
    for (const name of APP_DEPS.split(' '))
      dependencies[name] = lock.packages[`node_modules/${name}`].version;
    const pkg = { name: 'probe-app', private: true, type: 'module', dependencies };
    writeFileSync(join(appDir, 'package.json'), JSON.stringify(pkg, null, 2));
    for (const [file, text] of Object.entries(appSources()))
      writeFileSync(join(appDir, file), text);

    const install = ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'];
    steps.install = run('npm install', 'npm', install, { cwd: appDir, timeout: 150_000 });
    if (!steps.install.ok) return;
    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    steps.tsc = run('tsc', process.execPath, [tsc, '-p', join(appDir, 'tsconfig.json')], {
      timeout: 60_000,
    });
    if (!steps.tsc.ok) return;
    // A bare environment: nothing from the test process (or npm) leaks into the app.
    const env = { PATH: process.env.PATH ?? '', NO_COLOR: '1', DATABASE_URL: dbUrl };
    steps.app = run('probe app', process.execPath, ['dist/main.js'], {
      cwd: appDir,
      env,
      timeout: 45_000,
    });
  }, TIMEOUT + 90_000);

  afterAll(async () => {
    await admin((c) => c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`));
  });

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

  it("ran the package's migrations in the app's own DataSource", async () => {
    expectOk(steps.app, 'probe app');
    const sql = `SELECT to_regclass('delayed_task')::text AS t, array(SELECT name FROM migrations) AS names`;
    const [row] = await admin(async (c) => (await c.query(sql)).rows, dbUrl);
    expect(row.t).toBe('delayed_task');
    expect(row.names).toContainEqual(expect.stringMatching(/^CreateDelayedTask/));
  });
});
