import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describeWithServer } from '../support/test-database.js';
import {
  NEST_NEW_DEPS,
  NEST_NEW_DEV_DEPS_LOCKED,
  NEST_NEW_DEV_DEPS_PINNED,
  NEST_NEW_FILES,
  NEST_NEW_SCRIPTS,
} from './nest-new-app.js';
import { chromium } from 'playwright-core';
import { captionedFiles, installLines, spliceModuleLines, withinRange } from './readme-setup.js';
import { serverDatabase } from './server-database.js';
import {
  cleanUp,
  expectOk,
  lockedVersion,
  npmEnv,
  npmInstall,
  pack,
  pkgDir,
  run,
  type Step,
} from './tarball.js';

// The stranger: an app as `nest new` (CLI 12) makes it, Vitest and
// TypeScript 6, then the package README's Installing, Getting started, The
// admin page and Tracing followed to the letter: its install lines, the files
// it shows, the lines it adds, its commands. Nothing else from this
// repository reaches the app but the tarball.
// The scaffold's two Vitest configs stay apart: `npm test` runs the unit
// tests with no database, `npm run test:e2e` the ones that boot the app
// (the README's, the docs' tracing and dead-letter tests, the scaffold's own),
// twice on one database, as a developer runs them again.

const TIMEOUT = 300_000;
const readme = readFileSync(join(pkgDir, 'README.md'), 'utf8');
const tracingDoc = readFileSync(join(pkgDir, 'docs/tracing.md'), 'utf8');
const testingDoc = readFileSync(join(pkgDir, 'docs/testing.md'), 'utf8');
const pkgVersion: string = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')).version;
/** The README's step 4, what main.ts must import first for tracing. */
const TRACING_IMPORT = "import './tracing.js';";

afterAll(cleanUp);

/** The e2e tests the docs show for the README's app. */
const DOC_TESTS: Array<[doc: string, file: string]> = [
  [tracingDoc, 'test/tracing.e2e-spec.ts'],
  [testingDoc, 'test/dead-letter.e2e-spec.ts'],
];

/** The README's files on top of the scaffold's; the docs' e2e tests. */
function appFiles(): Map<string, string> {
  const files = new Map(Object.entries(NEST_NEW_FILES));
  for (const [file, text] of captionedFiles(readme)) files.set(file, text);
  for (const [doc, file] of DOC_TESTS) {
    const text = captionedFiles(doc).get(file);
    if (!text) throw new Error(`the docs no longer show ${file}`);
    files.set(file, text);
  }
  // "import it first in main.ts", as the README's Tracing says.
  files.set('src/main.ts', `${TRACING_IMPORT}\n${files.get('src/main.ts')}`);
  // The admin page's lines, "in AppModule's imports, after DelayModule".
  files.set(
    'src/app.module.ts',
    spliceModuleLines(
      readme,
      '## The admin page',
      files.get('src/app.module.ts')!,
      'DelayModule.forRoot(',
    ),
  );
  return files;
}

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ADMIN_TOKEN = randomBytes(32).toString('hex');

/** What the admin page showed of one order's timeline, signed in with the token. */
interface AdminPageSeen {
  title: string;
  tasks: string;
  due: string;
  errors: string[];
}

/**
 * Opens the app's /admin on order o-3's timeline in Chromium, pastes the
 * token as the README says, and reads the timeline: a task still due.
 */
async function readAdminPage(port: string): Promise<AdminPageSeen> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu'],
  });
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(`http://127.0.0.1:${port}/admin#/timeline?entity=order:o-3`);
    await page.fill('#token', ADMIN_TOKEN);
    await page.click('#login-form button[type=submit]');
    // The body shows at once; its rows once the timeline is read.
    await page.waitForSelector('#timeline-steps tbody tr[data-event="scheduled"]', {
      timeout: 20_000,
    });
    const text = (selector: string) => page.locator(selector).first().innerText();
    return {
      title: await text('#timeline-title'),
      tasks: await text('#timeline-tasks'),
      due: await text('#timeline-due'),
      errors,
    };
  } finally {
    await browser.close();
  }
}

/**
 * Starts the built app, creates an order closing 1 s later and one closing
 * in an hour over HTTP, waits for the first's handler log line, reads the
 * admin page (when there is a Chromium), then sends SIGTERM; resolves with
 * its output and exit code. Waits on the line, never on time (the timeout
 * only ends a hang).
 */
function runApp(
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{
  exit: string;
  output: string;
  answers: string[];
  admin: AdminPageSeen | Error | 'no chromium' | undefined;
}> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['dist/main.js'], { cwd, env });
    let output = '';
    const answers: string[] = [];
    let posted = false;
    let admin: AdminPageSeen | Error | 'no chromium' | undefined;
    const hang = setTimeout(() => child.kill('SIGKILL'), 90_000);
    const onData = async (chunk: Buffer) => {
      output += chunk.toString();
      if (!posted && output.includes('Nest application successfully started')) {
        posted = true;
        const base = `http://127.0.0.1:${env.PORT}/orders`;
        for (const url of [
          `${base}/o-1?closeAfter=1s`,
          `${base}/o-2?closeAfter=soon`,
          `${base}/o-3?closeAfter=1h`,
        ]) {
          const response = await postOnceListening(url, () => child.exitCode === null);
          answers.push(`${response.status} ${await response.text()}`);
        }
      }
      if (admin === undefined && /Order o-1 closed, \d+ ms after its due time/.test(output)) {
        admin = existsSync(CHROMIUM)
          ? await readAdminPage(env.PORT!).catch((error: Error) => error)
          : 'no chromium';
        child.kill('SIGTERM');
      }
    };
    child.stdout.on('data', (c: Buffer) => void onData(c).catch(reject));
    child.stderr.on('data', (c: Buffer) => void onData(c).catch(reject));
    child.on('exit', (code, signal) => {
      clearTimeout(hang);
      resolve({ exit: signal ?? `code ${code}`, output, answers, admin });
    });
  });
}

/**
 * Nest logs "successfully started" from init(), before listen() has bound
 * the port: a POST sent on that line can be refused (it was, on a loaded CI
 * machine). Refused connections are tried again while the app runs (its
 * hang timeout ends one that never binds the port).
 */
async function postOnceListening(url: string, running: () => boolean): Promise<Response> {
  for (;;) {
    try {
      return await fetch(url, { method: 'POST' });
    } catch (error) {
      const code = (error as { cause?: { code?: string } }).cause?.code;
      if (code !== 'ECONNREFUSED' || !running()) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** Vitest's report: the test files it passed, and its "Tests" line. */
function summaryOf(step: Step): { files: string[]; summary: string } {
  const files = [...step.output.matchAll(/^\s*✓ (\S+\.ts) /gm)].map(([, file]) => file).sort();
  return { files, summary: /Tests\s+(\d+ passed \(\d+\))/.exec(step.output)?.[1] ?? step.detail };
}

const TYPED_TASKS_CHECK = `import { DelayedTaskHandler, DelayService, defineTask } from 'nest-delay';

export const CloseUnpaid = defineTask<{ orderId: string }>('order.close-unpaid');

export class TypedTasks {
  constructor(private readonly delay: DelayService) {}

  schedule(orderId: string) {
    // @ts-expect-error a wrong payload
    void this.delay.schedule(CloseUnpaid.with({ orderId: 42 }));
    // @ts-expect-error a misspelt duration
    void this.delay.schedule(CloseUnpaid.with({ orderId }, { delay: '20 seconds' }));
    return this.delay.schedule(CloseUnpaid.with({ orderId }, { delay: '30m' }));
  }

  // @ts-expect-error a handler of another payload
  @DelayedTaskHandler(CloseUnpaid)
  wrong(payload: { orderId: number }) {
    return payload;
  }
}

// @ts-expect-error a payload type that is not JSON
export const WithDate = defineTask<{ at: Date }>('with.date');
`;

describeWithServer('a `nest new` app (Vitest) following the package README', () => {
  let db: Awaited<ReturnType<typeof serverDatabase>>;
  let appDir: string;
  const steps: Partial<Record<'install' | 'tsc' | 'unit' | 'e2e' | 'e2eAgain' | 'build', Step>> =
    {};
  let app: Awaited<ReturnType<typeof runApp>> | undefined;

  beforeAll(async () => {
    db = await serverDatabase('nn');
    const { tarball, work } = pack();
    appDir = join(work, 'nest-new');
    const dependencies: Record<string, string> = {};
    const devDependencies: Record<string, string> = { ...NEST_NEW_DEV_DEPS_PINNED };
    for (const name of NEST_NEW_DEPS) dependencies[name] = lockedVersion(name);
    for (const name of NEST_NEW_DEV_DEPS_LOCKED) devDependencies[name] = lockedVersion(name);
    for (const { name, range } of [...installLines(readme), ...installLines(tracingDoc)]) {
      if (name === 'nest-delay') {
        // The tarball the README names is the one `npm pack` writes for this version.
        if (range !== pkgVersion)
          throw new Error(`README installs nest-delay-${range}.tgz; npm pack writes ${pkgVersion}`);
        dependencies[name] = `file:${tarball}`;
        continue;
      }
      const version = lockedVersion(name);
      if (!withinRange(version, range))
        throw new Error(`README installs ${name}@${range}; the repo tests ${version}`);
      dependencies[name] = version;
    }
    const pkg = {
      name: 'demo',
      version: '0.0.1',
      private: true,
      type: 'module',
      scripts: NEST_NEW_SCRIPTS,
      dependencies,
      devDependencies,
    };
    for (const [file, text] of appFiles()) {
      mkdirSync(join(appDir, dirname(file)), { recursive: true });
      writeFileSync(join(appDir, file), text);
    }
    writeFileSync(join(appDir, 'package.json'), JSON.stringify(pkg, null, 2));
    // Typed tasks from the tarball's types: each marked line must fail to
    // compile, or `tsc --noEmit` below fails on an unused @ts-expect-error.
    writeFileSync(join(appDir, 'src/typed-tasks.check.ts'), TYPED_TASKS_CHECK);

    steps.install = npmInstall(appDir);
    if (!steps.install.ok) return;
    const tsc = join(appDir, 'node_modules/typescript/bin/tsc');
    steps.tsc = run('tsc --noEmit', process.execPath, [tsc, '--noEmit'], {
      cwd: appDir,
      timeout: 90_000,
    });
    // As the README runs them, in a bare environment; npm needs only PATH and HOME.
    const bare = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NO_COLOR: '1' };
    const env = { ...bare, DATABASE_URL: db.url };
    steps.unit = run('npm test', 'npm', ['test'], { cwd: appDir, env: bare, timeout: 120_000 });
    const e2e = () =>
      run('npm run test:e2e', 'npm', ['run', 'test:e2e'], { cwd: appDir, env, timeout: 120_000 });
    steps.e2e = e2e();
    steps.e2eAgain = e2e();
    steps.build = run('npm run build', 'npm', ['run', 'build'], {
      cwd: appDir,
      env: npmEnv,
      timeout: 90_000,
    });
    if (!steps.build.ok) return;
    const port = String(20_000 + Math.floor(Math.random() * 20_000));
    // As the README's The admin page runs it.
    app = await runApp(appDir, { ...env, PORT: port, ADMIN_TOKEN });
  }, TIMEOUT);

  afterAll(() => db?.drop());

  it("installs with the README's lines on the scaffold's TypeScript 6, no ERESOLVE", () => {
    expectOk(steps.install, 'npm install');
    expect(installLines(readme).map((i) => i.name)).toContain('nest-delay');
    const typescript = JSON.parse(
      readFileSync(join(appDir, 'node_modules/typescript/package.json'), 'utf8'),
    );
    expect(typescript.version).toMatch(/^6\./);
  });

  it("type-checks with the scaffold's tsconfig (types: vitest/globals, node), typed tasks' wrong uses refused", () => {
    expectOk(steps.tsc, 'tsc --noEmit');
  });

  it("runs the scaffold's unit test with `npm test` and no DATABASE_URL: the README leaves its config as it was", () => {
    expect(captionedFiles(readme).has('vitest.config.ts')).toBe(false);
    expectOk(steps.unit, 'npm test');
    expect(summaryOf(steps.unit)).toEqual({
      files: ['src/app.controller.spec.ts'],
      summary: '1 passed (1)',
    });
  });

  it("passes the README's e2e test, the docs' (a task dead-lettered in one advance) and the scaffold's, twice on one database", () => {
    const files = [
      'test/app.e2e-spec.ts',
      'test/dead-letter.e2e-spec.ts',
      'test/orders.e2e-spec.ts',
      'test/tracing.e2e-spec.ts',
    ];
    expectOk(steps.e2e, 'npm run test:e2e');
    expect(summaryOf(steps.e2e)).toEqual({ files, summary: '4 passed (4)' });
    // Again on the same database: reset() leaves nothing of the first run (its timelines too).
    expectOk(steps.e2eAgain, 'npm run test:e2e, again');
    expect(summaryOf(steps.e2eAgain)).toEqual({ files, summary: '4 passed (4)' });
  });

  it('runs: a task fires in the app against Postgres, a bad duration is a 400, SIGTERM stops it cleanly', async () => {
    expectOk(steps.build, 'npm run build');
    if (!app) throw new Error('the app did not run');
    const detail = `--- app output ---\n${app.output.slice(-4000)}`;
    expect({ answers: app.answers, detail }).toMatchObject({
      answers: [
        expect.stringMatching(/^201 /),
        expect.stringMatching(/^400 .*delay must be/),
        expect.stringMatching(/^201 /),
      ],
    });
    expect({ closed: /Order o-1 closed/.test(app.output), detail }).toMatchObject({ closed: true });
    // Nest's shutdown hooks close the app, then raise the signal again.
    expect({ exit: app.exit, detail }).toMatchObject({ exit: 'SIGTERM' });
    // enableShutdownHooks() is in the README's main.ts: no warning that nothing handles SIGTERM.
    expect(app.output).not.toMatch(/SIGTERM/);
    // A clean stop retires the instance (a killed one would leave its row until its lease expires).
    expect(await db.query(`SELECT id FROM delay_instance`)).toEqual([]);
    expect(await db.query(`SELECT id, status FROM orders WHERE id LIKE 'o-%' ORDER BY id`)).toEqual(
      [
        { id: 'o-1', status: 'CLOSED' },
        { id: 'o-3', status: 'PENDING_PAYMENT' },
      ],
    );
  });

  it("serves the admin page the README mounts: an order's task still due, on its timeline", () => {
    if (!app) throw new Error('the app did not run');
    if (app.admin === 'no chromium') {
      console.warn(
        `admin page not opened: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`,
      );
      return;
    }
    if (!app.admin || app.admin instanceof Error)
      throw new Error(
        `the admin page: ${app.admin?.message ?? 'not opened'}\n${app.output.slice(-3000)}`,
      );
    expect(app.admin).toMatchObject({ title: 'order:o-3', errors: [] });
    expect(app.admin.tasks).toMatch(/order\.close-unpaid\s*pending/);
    expect(app.admin.due).toContain('order:o-3:close');
  });
});
