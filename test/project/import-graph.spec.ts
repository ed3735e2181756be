import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

// `npm run lint` runs dependency-cruiser with .dependency-cruiser.cjs over the
// package and the app. These cases plant, in a scratch copy of the layout,
// the imports its rules exist to refuse, and check that each is refused by
// name: the rules would otherwise pass quietly on a typo in a path pattern.
const run = promisify(execFile);
const root = process.cwd();
const depcruise = join(root, 'node_modules/.bin/depcruise');

async function cruise(files: Record<string, string>): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'import-graph-'));
  try {
    cpSync(join(root, '.dependency-cruiser.cjs'), join(dir, '.dependency-cruiser.cjs'));
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext' } }),
    );
    // Both roots exist, as in the repository (depcruise stops on a missing one).
    for (const [path, text] of Object.entries({ 'src/main.ts': 'export {};\n', ...files })) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
    try {
      const { stdout } = await run(
        depcruise,
        ['packages/nest-delay/src', 'src', '--config', '.dependency-cruiser.cjs'],
        { cwd: dir },
      );
      return stdout;
    } catch (error) {
      // depcruise exits non-zero when it finds violations: its report is the answer.
      const { stdout, stderr } = error as { stdout: string; stderr: string };
      return stdout + stderr;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const pkg = (path: string) => `packages/nest-delay/src/${path}`;

describe('the import rules checked by npm run lint', () => {
  it('pass a graph that points down', async () => {
    const report = await cruise({
      [pkg('store/sql.ts')]: `export const sql = 1;\n`,
      [pkg('claim/claim-runner.ts')]:
        `import { sql } from '../store/sql.js';\nexport const run = sql;\n`,
    });
    expect(report).toMatch(/no dependency violations found/);
  });

  it('refuse an import cycle', async () => {
    const report = await cruise({
      [pkg('claim/a.ts')]: `import { b } from './b.js';\nexport const a = () => b;\n`,
      [pkg('claim/b.ts')]: `import { a } from './a.js';\nexport const b = () => a;\n`,
    });
    expect(report).toMatch(/error no-circular/);
  });

  it('refuse the store reaching up to a feature', async () => {
    const report = await cruise({
      [pkg('claim/claim-runner.ts')]: `export const run = 1;\n`,
      [pkg('store/sql.ts')]:
        `import { run } from '../claim/claim-runner.js';\nexport const sql = run;\n`,
    });
    expect(report).toMatch(/error layer-store/);
  });

  it('refuse a wheel that imports a clock', async () => {
    const report = await cruise({
      [pkg('clock/clock.ts')]: `export const now = () => 0;\n`,
      [pkg('wheel/timing-wheel.ts')]:
        `import { now } from '../clock/clock.js';\nexport const w = now;\n`,
    });
    expect(report).toMatch(/error wheel-is-pure/);
  });

  it('refuse a feature reaching the runtime that wires it', async () => {
    const report = await cruise({
      [pkg('runtime/delay.runtime.ts')]: `export const runtime = 1;\n`,
      [pkg('limits/limit-gate.ts')]:
        `import { runtime } from '../runtime/delay.runtime.js';\nexport const g = runtime;\n`,
    });
    expect(report).toMatch(/error layer-limits/);
  });

  it('refuse limits reaching up to the claim, even for a type', async () => {
    const report = await cruise({
      [pkg('claim/claim-runner.ts')]: `export interface ClaimRunner { run(): void }\n`,
      [pkg('limits/gate-claims.ts')]:
        `import type { ClaimRunner } from '../claim/claim-runner.js';\nexport type G = ClaimRunner;\n`,
    });
    expect(report).toMatch(/error layer-limits/);
  });

  it('pass a public service in a feature folder that reaches the runtime', async () => {
    const report = await cruise({
      [pkg('runtime/delay.runtime.ts')]: `export const runtime = 1;\n`,
      [pkg('limits/delay-limits.service.ts')]:
        `import { runtime } from '../runtime/delay.runtime.js';\nexport const s = runtime;\n`,
    });
    expect(report).toMatch(/no dependency violations found/);
  });

  it('refuse the root types reaching a public service', async () => {
    const report = await cruise({
      [pkg('delay.service.ts')]: `export const service = 1;\n`,
      [pkg('task.types.ts')]:
        `import { service } from './delay.service.js';\nexport const t = service;\n`,
    });
    expect(report).toMatch(/error layer-base/);
  });

  it("refuse the app importing the package's files instead of its name", async () => {
    const report = await cruise({
      [pkg('claim/claim-runner.ts')]: `export const run = 1;\n`,
      'src/orders/orders.service.ts': `import { run } from '../../packages/nest-delay/src/claim/claim-runner.js';\nexport const s = run;\n`,
    });
    expect(report).toMatch(/error app-uses-the-package-by-name/);
  });
});
