/**
 * `npm run bench:api-backlog [-- <backlog> <rounds> <seconds>]`: the API's
 * latency under a backlog (issue 45 wants it within 2× of its unloaded
 * value). Each round starts the example app (dist/src/main.js) on a fresh
 * database (so no round inherits the last one's rate-limited notifications),
 * then measures GET /orders/:id and POST /orders
 * p50/p99 for `seconds` unloaded, and for `seconds` while `backlog`
 * (50,000 by default) of the orders' own close-unpaid tasks, all made due at
 * once, drain (the app's defaults: concurrency half its pool), from the
 * engine's first task of it on (DELAY_CONCURRENCY, if set, goes to the app). Requests go
 * one after another from two clients, as a user's would. Prints each
 * round, the medians and the loaded/unloaded ratios; tests assert the pool
 * is shared (test/delay/pool-share.e2e-spec.ts), this only measures.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { dropDatabase, freshDatabase, withClient } from './harness/db.js';
import { freePort } from './harness/free-port.js';

const backlog = Number(process.argv[2] ?? 50_000);
const rounds = Number(process.argv[3] ?? 3);
const seconds = Number(process.argv[4] ?? 10);
const DATABASE = 'bench_api_backlog';
const SECRET = 'bench-api-backlog-secret-0123456789abcdef';
const MAIN = fileURLToPath(new URL('../../../dist/src/main.js', import.meta.url));

const b64 = (value: string) => Buffer.from(value).toString('base64url');
function token(sub: string): string {
  const now = Math.floor(Date.now() / 1000);
  const input = `${b64(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))}.${b64(JSON.stringify({ sub, iat: now, exp: now + 3600 }))}`;
  return `Bearer ${input}.${createHmac('sha256', SECRET).update(input).digest('base64url')}`;
}


async function startApp(
  url: string,
): Promise<{ base: string; child: ChildProcess; output: () => string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: url,
      AUTH_JWT_SECRET: SECRET,
      PORT: String(port),
      // The API's own order keeps its close an hour away; the backlog's are due now.
      ORDER_PAYMENT_TIMEOUT: '1h',
      NO_COLOR: '1',
      // The claims' share of the pool (the app's default: half of it).
      ...(process.env.DELAY_CONCURRENCY
        ? { DELAY_CONCURRENCY: process.env.DELAY_CONCURRENCY }
        : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
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

/** `count` unpaid orders copied from `template`, each with its close-unpaid task due now. */
async function makeBacklog(url: string, template: string, count: number): Promise<void> {
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
       SELECT 'order.close-unpaid', 'order:' || id || ':close-unpaid', 'order:' || id,
              jsonb_build_object('orderId', id), now(), 5, now(), now()
       FROM copies`,
      [template, count],
    );
  });
}

/** Close-unpaid tasks of the backlog not yet run. */
async function left(url: string): Promise<number> {
  return withClient(url, async (client) => {
    const { rows } = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM delayed_task
       WHERE type = 'order.close-unpaid' AND executed_at IS NULL AND cancelled_at IS NULL
         AND dead_at IS NULL AND due_at <= now()`,
    );
    return rows[0].n;
  });
}

/** One round on a database and app of its own: unloaded, then under the backlog until it drains. */
async function round(n: number): Promise<Row[]> {
  const url = await freshDatabase(DATABASE);
  const { base, child, output } = await startApp(url);
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
    const unloaded = await measure(base, template, seconds * 1000);
    await makeBacklog(url, template, backlog);
    const start = performance.now();
    // The engine finds the backlog at its next loader round (a heartbeat,
    // up to 10 s by default): the loaded phase starts once it drains.
    while ((await left(url)) === backlog) await new Promise((resolve) => setTimeout(resolve, 100));
    const startedAfterMs = performance.now() - start;
    const loaded = await measure(base, template, seconds * 1000);
    if ((await left(url)) === 0)
      console.log(`round ${n}: the backlog drained within the measurement; use a larger one`);
    while ((await left(url)) > 0) await new Promise((resolve) => setTimeout(resolve, 500));
    // What the app said of the requests it failed, if any.
    for (const line of output()
      .split('\n')
      .filter((text) => /Mapped to|ExceptionsHandler/.test(text))
      .slice(0, 3))
      console.log(`round ${n}, app: ${line.slice(0, 400)}`);
    return [
      { round: n, loaded: false, l: unloaded },
      { round: n, loaded: true, l: loaded, drainedMs: performance.now() - start, startedAfterMs },
    ];
  } finally {
    child.kill('SIGINT');
    await new Promise((resolve) => child.once('exit', resolve));
    await dropDatabase(DATABASE);
  }
}

interface Row {
  round: number;
  loaded: boolean;
  l: Latencies;
  drainedMs?: number;
  /** From the backlog's insert to the engine's first task of it. */
  startedAfterMs?: number;
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  for (let n = 1; n <= rounds; n++) rows.push(...(await round(n)));
  console.log(`backlog ${backlog} close-unpaid tasks due at once; ${seconds} s a phase; two users`);
  console.log(
    'round  phase     GET p50  GET p99  POST p50  POST p99  answered  failed  backlog drained (began after)',
  );
  for (const { round: n, loaded, l, drainedMs, startedAfterMs } of rows) {
    const failed = Object.entries(l.failed).map(([what, count]) => `${count} ${what}`);
    console.log(
      `${String(n).padEnd(6)} ${(loaded ? 'backlog' : 'unloaded').padEnd(9)} ${ms(pct(l.get, 50)).padStart(7)}  ${ms(pct(l.get, 99)).padStart(7)}  ${ms(pct(l.post, 50)).padStart(8)}  ${ms(pct(l.post, 99)).padStart(8)}  ${String(l.get.length + l.post.length).padStart(8)}  ${(failed.join(', ') || '0').padStart(6)}  ${drainedMs === undefined ? '' : `${(drainedMs / 1000).toFixed(1)} s (${((startedAfterMs ?? 0) / 1000).toFixed(1)} s)`}`,
    );
  }
  const serverErrors = rows
    .flatMap(({ l }) => Object.entries(l.failed))
    .filter(([what]) => / 5\d\d$/.test(what))
    .reduce((sum, [, count]) => sum + count, 0);
  console.log(`5xx answers in measured phases: ${serverErrors}`);
  const of = (loaded: boolean, pick: (l: Latencies) => number) =>
    median(rows.filter((row) => row.loaded === loaded).map((row) => pick(row.l)));
  for (const [name, pick] of [
    ['GET p50', (l: Latencies) => pct(l.get, 50)],
    ['GET p99', (l: Latencies) => pct(l.get, 99)],
    ['POST p50', (l: Latencies) => pct(l.post, 50)],
    ['POST p99', (l: Latencies) => pct(l.post, 99)],
  ] as const) {
    const unloaded = of(false, pick);
    const loaded = of(true, pick);
    console.log(
      `${name}, median of rounds: ${ms(unloaded)} ms unloaded, ${ms(loaded)} ms under the backlog: ${(loaded / unloaded).toFixed(2)}×`,
    );
  }
}

await main();
