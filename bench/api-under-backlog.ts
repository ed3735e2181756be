/**
 * `npm run bench:api-backlog [-- <backlog> <rounds> <seconds> <concurrencies>]`:
 * the API's latency under a backlog (issue 45 wants it within 2× of its
 * unloaded value), against a floor measured in the same run. Each round, for
 * each claim concurrency (`5,2` by default: DELAY_CONCURRENCY of the app),
 * starts the example app (dist/src/main.js) on a fresh database (so no round
 * inherits the last one's rate-limited notifications) and measures GET
 * /orders/:id and POST /orders p50/p99 for `seconds` unloaded, then for
 * `seconds` while each of two drains runs on `backlog` (50,000 by default)
 * unpaid orders, their closes all due at once: the engine running the
 * orders' own close-unpaid tasks (measured from its first task of them on),
 * and the floor (floor-drain.ts) closing the same orders with plain SQL on as
 * many connections. Odd rounds run the engine's drain first, even rounds the
 * floor's. Requests go one after another from two clients, as a user's
 * would. Prints each phase, its drain rate over the measured seconds, and the
 * medians of each round's loaded/unloaded ratios; tests assert the pool is
 * shared (test/delay/pool-share.e2e-spec.ts), this only measures.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { dropDatabase, freshDatabase, withClient } from './harness/db.js';
import { freePort } from './harness/free-port.js';
import { FLOOR_TYPE, startFloorDrain } from './floor-drain.js';
import type { ProbeReading, ProbeRequest } from './in-app-probe.js';

const CLOSE_UNPAID = 'order.close-unpaid';

const backlog = Number(process.argv[2] ?? 50_000);
const rounds = Number(process.argv[3] ?? 3);
const seconds = Number(process.argv[4] ?? 10);
const concurrencies = (process.argv[5] ?? '5,2').split(',').map(Number);
const DATABASE = 'bench_api_backlog';
const SECRET = 'bench-api-backlog-secret-0123456789abcdef';
const MAIN = fileURLToPath(new URL('../../../dist/src/main.js', import.meta.url));
const PROBE = fileURLToPath(new URL('./in-app-probe.js', import.meta.url));

const b64 = (value: string) => Buffer.from(value).toString('base64url');
function token(sub: string): string {
  const now = Math.floor(Date.now() / 1000);
  const input = `${b64(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))}.${b64(JSON.stringify({ sub, iat: now, exp: now + 3600 }))}`;
  return `Bearer ${input}.${createHmac('sha256', SECRET).update(input).digest('base64url')}`;
}

/** Sends `request` to the probe in the app's process and waits for its answer of type `answer`. */
function ask<T = unknown>(child: ChildProcess, request: ProbeRequest, answer: string): Promise<T> {
  return new Promise((resolve) => {
    const listen = (message: { type: string }) => {
      if (message.type !== answer) return;
      child.off('message', listen);
      resolve(message as T);
    };
    child.on('message', listen);
    child.send(request);
  });
}

async function startApp(
  url: string,
  concurrency: number,
): Promise<{ base: string; child: ChildProcess; output: () => string }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', PROBE, MAIN], {
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: url,
      AUTH_JWT_SECRET: SECRET,
      PORT: String(port),
      // The API's own order keeps its close an hour away; the backlog's are due now.
      ORDER_PAYMENT_TIMEOUT: '1h',
      NO_COLOR: '1',
      DELAY_CONCURRENCY: String(concurrency),
    },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start in 60 s:\n${output}`)), 60_000);
    child.stdout?.on('data', () => {
      if (output.includes('Listening on')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}:\n${output}`)));
  });
  return { base: `http://127.0.0.1:${port}`, child, output: () => output };
}

interface Latencies {
  get: number[];
  post: number[];
  /** Answers other than 200 (GET) and 201 (POST), by method and status. */
  failed: Record<string, number>;
}

/**
 * One request, read to its end. An answer that is not JSON is kept as
 * undefined, and a request that got no answer (a reset connection) has the
 * status 'no answer': both are counted as failed, never end the run.
 */
async function send(
  url: string,
  init: RequestInit,
): Promise<{ status: number | 'no answer'; body?: unknown }> {
  try {
    const response = await fetch(url, init);
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    return { status: response.status, body };
  } catch {
    return { status: 'no answer' };
  }
}

/** Two users, each sending POST then GET of its order one after another, for `ms`. */
async function measure(base: string, orderId: string, ms: number): Promise<Latencies> {
  const out: Latencies = { get: [], post: [], failed: {} };
  const fail = (what: string) => (out.failed[what] = (out.failed[what] ?? 0) + 1);
  const until = performance.now() + ms;
  const user = async (n: number) => {
    const authorization = token(`bench-${n}`);
    // Each reads its own orders (a user sees only those): the last one it created.
    let own = n === 0 ? orderId : undefined;
    while (performance.now() < until) {
      let t0 = performance.now();
      const posted = await send(`${base}/orders`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body: JSON.stringify({ userId: `bench-${n}`, amountCents: 100 }),
      });
      if (posted.status === 201) out.post.push(performance.now() - t0);
      else fail(`POST ${posted.status}`);
      own = (posted.body as { id?: string } | undefined)?.id ?? own;
      if (own === undefined) continue;
      t0 = performance.now();
      const got = await send(`${base}/orders/${own}`, { headers: { authorization } });
      if (got.status === 200) out.get.push(performance.now() - t0);
      else fail(`GET ${got.status}`);
    }
  };
  await Promise.all([0, 1].map(user));
  return out;
}

const pct = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
};
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const ms = (value: number) => value.toFixed(1);

/** `count` unpaid orders copied from `template`, each with a close of type `type` due now. */
async function makeBacklog(
  url: string,
  template: string,
  count: number,
  type: string,
): Promise<void> {
  await withClient(url, async (client) => {
    await client.query(
      `WITH copies AS (
         INSERT INTO orders
         SELECT (jsonb_populate_record(null::orders,
                   to_jsonb(o) || jsonb_build_object('id', gen_random_uuid(), 'user_id', 'backlog'))).*
         FROM orders o, generate_series(1, $2) WHERE o.id = $1
         RETURNING id
       )
       INSERT INTO delayed_task (type, key, entity, payload, due_at, max_attempts, created_at, updated_at)
       SELECT $3, 'order:' || id || ':close-unpaid', 'order:' || id,
              jsonb_build_object('orderId', id), now(), 5, now(), now()
       FROM copies`,
      [template, count, type],
    );
  });
}

/** Closes of type `type` not yet run. */
async function left(url: string, type: string): Promise<number> {
  return withClient(url, async (client) => {
    const { rows } = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM delayed_task
       WHERE type = $1 AND executed_at IS NULL AND cancelled_at IS NULL
         AND dead_at IS NULL AND due_at <= now()`,
      [type],
    );
    return rows[0].n;
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `floor` and `floor@engine` (paced to the engine's rate) run inside the
 * app's process (in-app-probe.ts), on its event loop as the engine does;
 * `floor outside` runs in this process, so only the CPU is shared.
 */
type Phase = 'unloaded' | 'engine' | 'floor' | 'floor@engine' | 'floor outside';

interface Row {
  round: number;
  concurrency: number;
  phase: Phase;
  l: Latencies;
  /** Closes run a second over the measured seconds. */
  rate?: number;
  /** From the backlog's insert to its first close run. */
  startedAfterMs?: number;
  /** The app's process over the measured seconds. */
  probe: ProbeReading;
  /** Closes run over the measured seconds. */
  closes?: number;
}

/** The requests while `backlog` closes drain, by the engine or by the floor. */
async function underDrain(
  url: string,
  child: ChildProcess,
  base: string,
  template: string,
  concurrency: number,
  phase: Exclude<Phase, 'unloaded'>,
  engineRate?: number,
): Promise<Omit<Row, 'round'>> {
  const type = phase === 'engine' ? CLOSE_UNPAID : FLOOR_TYPE;
  await makeBacklog(url, template, backlog, type);
  const start = performance.now();
  const floor =
    phase === 'floor outside'
      ? startFloorDrain(url, concurrency)
      : phase === 'engine'
        ? undefined
        : await ask(
            child,
            {
              type: 'floor-start',
              url,
              concurrency,
              rate: phase === 'floor' ? undefined : engineRate,
            },
            'floor-started',
          ).then(() => ({ stop: () => ask(child, { type: 'floor-stop' }, 'floor-stopped') }));
  // The engine finds the backlog at its next loader round (a heartbeat,
  // up to 10 s by default): the measured phase starts once it drains.
  while ((await left(url, type)) === backlog) await sleep(100);
  const startedAfterMs = performance.now() - start;
  const before = await left(url, type);
  await ask(child, { type: 'mark' }, 'marked');
  const t0 = performance.now();
  const l = await measure(base, template, seconds * 1000);
  const { reading: probe } = await ask<{ reading: ProbeReading }>(
    child,
    { type: 'read' },
    'reading',
  );
  const after = await left(url, type);
  const rate = (before - after) / ((performance.now() - t0) / 1000);
  if (after === 0)
    console.log(`${phase}: the backlog drained within the measurement; use a larger one`);
  // The rest is cancelled, not waited out: the next phase starts on an idle engine.
  await floor?.stop();
  await withClient(url, (c) =>
    c.query(
      `UPDATE delayed_task SET cancelled_at = now() WHERE type = $1 AND executed_at IS NULL AND cancelled_at IS NULL`,
      [type],
    ),
  );
  await sleep(2_000);
  return { concurrency, phase, l, rate, startedAfterMs, probe, closes: before - after };
}

/** One round at one concurrency, on a database and app of its own: unloaded, then under both drains. */
async function round(n: number, concurrency: number): Promise<Row[]> {
  const url = await freshDatabase(DATABASE);
  const { base, child, output } = await startApp(url, concurrency);
  try {
    const created = await fetch(`${base}/orders`, {
      method: 'POST',
      headers: { authorization: token('bench-0'), 'content-type': 'application/json' },
      body: JSON.stringify({ userId: 'bench-0', amountCents: 100 }),
    });
    const template = ((await created.json()) as { id: string }).id;
    // Warm up: the first requests pay for JIT and the pool's connections.
    const warmup = await measure(base, template, 2_000);
    for (const [what, count] of Object.entries(warmup.failed))
      console.log(`round ${n}, warm-up: ${count} ${what}`);
    await ask(child, { type: 'mark' }, 'marked');
    const unloaded = await measure(base, template, seconds * 1000);
    const { reading } = await ask<{ reading: ProbeReading }>(child, { type: 'read' }, 'reading');
    const rows: Row[] = [{ round: n, concurrency, phase: 'unloaded', l: unloaded, probe: reading }];
    // The paced floor needs the engine's rate of this round, so it comes last.
    const order: Array<Exclude<Phase, 'unloaded'>> =
      n % 2
        ? ['engine', 'floor', 'floor outside', 'floor@engine']
        : ['floor', 'floor outside', 'engine', 'floor@engine'];
    for (const phase of order) {
      const engineRate = rows.find((row) => row.phase === 'engine')?.rate;
      rows.push({
        round: n,
        ...(await underDrain(url, child, base, template, concurrency, phase, engineRate)),
      });
    }
    // What the app said of the requests it failed, if any.
    for (const line of output()
      .split('\n')
      .filter((text) => /Mapped to|ExceptionsHandler/.test(text))
      .slice(0, 3))
      console.log(`round ${n}, app: ${line.slice(0, 400)}`);
    return rows;
  } finally {
    child.kill('SIGINT');
    await new Promise((resolve) => child.once('exit', resolve));
    await dropDatabase(DATABASE);
  }
}

const PICKS = [
  ['GET p50', (l: Latencies) => pct(l.get, 50)],
  ['GET p99', (l: Latencies) => pct(l.get, 99)],
  ['POST p50', (l: Latencies) => pct(l.post, 50)],
  ['POST p99', (l: Latencies) => pct(l.post, 99)],
] as const;

async function main(): Promise<void> {
  const rows: Row[] = [];
  for (let n = 1; n <= rounds; n++)
    for (const concurrency of concurrencies) {
      console.log(`round ${n}, concurrency ${concurrency}: ${new Date().toISOString()}`);
      rows.push(...(await round(n, concurrency)));
    }
  console.log(`backlog ${backlog} closes due at once; ${seconds} s a phase; two users`);
  console.log(
    'round  conc  phase          GET p50  GET p99  POST p50  POST p99  answered  failed  closes/s (began after)  app CPU  loop p50/p99/max ms  app CPU a close',
  );
  const unloadedOf = (n: number, c: number) =>
    rows.find((row) => row.round === n && row.concurrency === c && row.phase === 'unloaded')!;
  for (const row of rows) {
    const { round: n, concurrency, phase, l, rate, startedAfterMs, probe, closes } = row;
    const failed = Object.entries(l.failed).map(([what, count]) => `${count} ${what}`);
    // The app's CPU beyond what its requests cost unloaded (per answer), a close.
    const base = unloadedOf(n, concurrency);
    const perAnswer = base.probe.cpuMs / (base.l.get.length + base.l.post.length);
    const drainCpu = probe.cpuMs - perAnswer * (l.get.length + l.post.length);
    const perClose = closes ? `${((drainCpu / closes) * 1000).toFixed(0)} µs` : '';
    console.log(
      `${String(n).padEnd(6)} ${String(concurrency).padEnd(5)} ${phase.padEnd(14)} ${PICKS.map(([name, pick]) => ms(pick(l)).padStart(name.length + 1)).join(' ')}  ${String(l.get.length + l.post.length).padStart(8)}  ${(failed.join(', ') || '0').padStart(6)}  ${(rate === undefined ? '' : `${rate.toFixed(0)} (${((startedAfterMs ?? 0) / 1000).toFixed(1)} s)`).padEnd(22)}  ${`${((probe.cpuMs / (seconds * 1000)) * 100).toFixed(0)}%`.padStart(7)}  ${[probe.loopP50, probe.loopP99, probe.loopMax].map(ms).join('/').padStart(19)}  ${perClose}`,
    );
  }
  const serverErrors = rows
    .flatMap(({ l }) => Object.entries(l.failed))
    .filter(([what]) => / 5\d\d$/.test(what))
    .reduce((sum, [, count]) => sum + count, 0);
  console.log(`5xx answers in measured phases: ${serverErrors}`);
  // Ratios within a round (the machine's load moves between rounds), then their median.
  const find = (n: number, c: number, phase: Phase) =>
    rows.find((row) => row.round === n && row.concurrency === c && row.phase === phase)!;
  const roundNumbers = [...new Set(rows.map((row) => row.round))];
  for (const c of concurrencies) {
    const each = (f: (n: number) => number) => roundNumbers.map(f);
    const show = (values: number[]) =>
      `${median(values).toFixed(2)}× (${values.map((v) => v.toFixed(2)).join(', ')})`;
    for (const [name, pick] of PICKS) {
      const ratio = (n: number, phase: Phase) =>
        pick(find(n, c, phase).l) / pick(find(n, c, 'unloaded').l);
      console.log(
        `concurrency ${c}, ${name}: engine ${show(each((n) => ratio(n, 'engine')))}, floor in the app ${show(each((n) => ratio(n, 'floor')))}, floor in the app at the engine's rate ${show(each((n) => ratio(n, 'floor@engine')))}, floor outside ${show(each((n) => ratio(n, 'floor outside')))}`,
      );
    }
    const rate = (phase: Phase) => each((n) => find(n, c, phase).rate ?? NaN);
    console.log(
      `concurrency ${c}, closes/s: engine ${median(rate('engine')).toFixed(0)}, floor in the app ${median(rate('floor')).toFixed(0)}, at the engine's rate ${median(rate('floor@engine')).toFixed(0)}, floor outside ${median(rate('floor outside')).toFixed(0)}`,
    );
  }
}

await main();
