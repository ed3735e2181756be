import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';

// The long-horizon harness's adapter (bench/long/harness-adapter), compiled
// with bench/ (`npm run build:bench`, which `pretest` runs), launched the way
// the harness launches it: its environment in, JSON lines out on stdout.
const MAIN = 'dist/bench/bench/long/harness-adapter/main.js';
const manifest = JSON.parse(readFileSync('bench/long/harness-adapter/adapter.json', 'utf8'));
const REQUIRED = [
  'claim_p50_ms',
  'claim_p95_ms',
  'claim_p99_ms',
  'enqueue_rate',
  'completion_rate',
  'queue_depth',
];
const TICKS = 5;
const SAMPLE_EVERY_S = 2;

describeWithServer('the harness adapter, run as the public harness runs it', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    if (!existsSync(MAIN))
      throw new Error(`${MAIN} is missing: run \`npm run build:bench\` first (npm test does it)`);
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  it('writes its descriptor, then the six metrics every tick, and exits 0 within 5 s of SIGTERM', async () => {
    const child = spawn(process.execPath, [MAIN], {
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL: db.url,
        SCENARIO: 'long_horizon',
        PRODUCER_MODE: 'fixed',
        PRODUCER_RATE: '50',
        WORKER_COUNT: '8',
        SAMPLE_EVERY_S: String(SAMPLE_EVERY_S),
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    // The last metric of each tick is written after the six: when TICKS of them are in, so are the ticks.
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${TICKS} ticks not seen in 25 s:\n${stdout}\n${stderr}`)),
        25_000,
      );
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        if ((stdout.match(/"metric":"producer_target_rate"/g) ?? []).length >= TICKS) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`adapter exited with ${code}:\n${stderr}`));
      });
    });

    const signalled = Date.now();
    child.kill('SIGTERM');
    const code = await exited;
    expect(Date.now() - signalled).toBeLessThan(5000);
    expect(code).toBe(0);

    const lines = stdout.split('\n').filter((line) => line !== '');
    const records = lines.map((line) => {
      try {
        return JSON.parse(line);
      } catch {
        throw new Error(`a stdout line that is not JSON: ${line}`);
      }
    });

    const [descriptor, ...samples] = records;
    expect(descriptor).toMatchObject({
      kind: 'descriptor',
      system: manifest.system,
      db_name: new URL(db.url).pathname.slice(1),
      extensions: expect.arrayContaining(manifest.extensions),
      event_tables: expect.arrayContaining(manifest.event_tables),
      version: expect.stringMatching(/^nest-delay@/),
      schema_version: expect.any(String),
    });
    expect(new Date(descriptor.started_at).toISOString()).toBe(descriptor.started_at);
    expect(samples.every((r) => r.kind === 'adapter' && r.system === manifest.system)).toBe(true);

    const ticks = new Map<string, Map<string, number>>();
    for (const r of samples) {
      if (!ticks.has(r.t)) ticks.set(r.t, new Map());
      ticks.get(r.t)!.set(r.metric, r.value);
    }
    expect(ticks.size).toBeGreaterThanOrEqual(TICKS);
    const times = [...ticks.keys()];
    for (const t of times) expect(Date.parse(t) % (SAMPLE_EVERY_S * 1000)).toBe(0);
    for (const [t, metrics] of ticks) {
      for (const metric of REQUIRED) {
        expect({ t, metric, value: metrics.get(metric) }).toEqual({
          t,
          metric,
          value: expect.any(Number),
        });
        expect(Number.isFinite(metrics.get(metric))).toBe(true);
      }
    }
    // The first tick may fall before the first task ran; every later one saw tasks complete.
    for (const t of times.slice(1)) expect(ticks.get(t)!.get('completion_rate')).toBeGreaterThan(0);
  }, 40_000);
});
