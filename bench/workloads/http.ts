/**
 * `http`: the real app (`node dist/src/main.js` after `npm run build`, on a
 * bench database) under autocannon: each of 10 connections creates an order,
 * pays it and finishes it, again and again. Requests per second and latency.
 * Skipped, saying why, when the build fails or `POST /orders` does not
 * answer 201.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import { issueToken } from '../../src/auth/issue-token.js';
import { dropDatabase, freshDatabase, withClient } from '../harness/db.js';
import { num, table } from '../harness/format.js';
import { log, Progress, sleep } from '../harness/progress.js';
import type { RunContext, Workload } from '../harness/workload.js';
import { freePort } from '../harness/free-port.js';

export type HttpResult =
  | { skipped: string }
  | {
      connections: number;
      seconds: number;
      requests: number;
      requestsPerSecond: number;
      latencyMs: { p50: number; p90: number; p99: number; max: number };
      non2xx: number;
      errors: number;
      flowsCompleted: number;
      ordersFinished: number;
    };

const JSON_HEADERS = { 'content-type': 'application/json' };


async function waitUntilServing(
  base: string,
  timeoutMs: number,
  exited: () => string | undefined,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const why = exited();
    if (why) throw new Error(why);
    try {
      await fetch(`${base}/orders?limit=1`);
      return;
    } catch {
      await sleep(250);
    }
  }
  throw new Error(`the app did not answer within ${timeoutMs / 1000} s`);
}

async function load(
  base: string,
  headers: Record<string, string>,
  connections: number,
  seconds: number,
) {
  let flowsCompleted = 0;
  // Every request carries the user's token (`headers`), verified as in production.
  const instance = autocannon({
    url: base,
    connections,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        path: '/orders',
        headers: { ...headers, ...JSON_HEADERS },
        body: JSON.stringify({ userId: 'bench', amountCents: 1234 }),
        onResponse: (status, body, context) => {
          context.id = status === 201 ? (JSON.parse(body) as { id: string }).id : 'missing';
        },
      },
      {
        method: 'POST',
        headers,
        setupRequest: (req, context) => ({ ...req, path: `/orders/${String(context.id)}/pay` }),
      },
      {
        method: 'POST',
        headers,
        setupRequest: (req, context) => ({ ...req, path: `/orders/${String(context.id)}/finish` }),
        onResponse: (status) => {
          if (status === 200) flowsCompleted++;
        },
      },
    ],
  });
  const bar = new Progress('autocannon', seconds, 's');
  const started = Date.now();
  instance.on('tick', () => bar.update((Date.now() - started) / 1000));
  const result = await instance;
  bar.done();
  return { result, flowsCompleted };
}

export const http: Workload<HttpResult> = {
  name: 'http',
  title: 'HTTP: create, pay, finish under load (the real app)',
  async run(ctx: RunContext) {
    const build = spawnSync(
      process.execPath,
      ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'],
      { encoding: 'utf8' },
    );
    if (build.status !== 0) {
      const skipped = `npm run build failed, so the app could not be started:\n${(build.stdout + build.stderr).trim().split('\n').slice(0, 5).join('\n')}`;
      log(`  skipped: ${skipped}`);
      return { skipped };
    }
    const database = ctx.database('http');
    const url = await freshDatabase(database);
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const output: string[] = [];
    // Users' tokens HS256 with a secret of this run; the load is one user's.
    const secret = randomBytes(32).toString('hex');
    const token = await issueToken(
      { userId: 'bench', admin: false, expires: '1d' },
      { AUTH_JWT_SECRET: secret },
    );
    const auth = { authorization: `Bearer ${token}` };
    const app = spawn(process.execPath, ['dist/src/main.js'], {
      env: {
        ...process.env,
        DATABASE_URL: url,
        PORT: String(port),
        DB_POOL_SIZE: '10',
        AUTH_JWT_SECRET: secret,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let exitedWith: string | undefined;
    app.stdout.on('data', (d: Buffer) => output.push(d.toString()));
    app.stderr.on('data', (d: Buffer) => output.push(d.toString()));
    app.on(
      'exit',
      (code) => (exitedWith = `the app exited with ${code}: ${output.join('').slice(-500)}`),
    );
    try {
      await waitUntilServing(base, 60_000, () => exitedWith);
      const probe = await fetch(`${base}/orders`, {
        method: 'POST',
        headers: { ...auth, ...JSON_HEADERS },
        body: JSON.stringify({ userId: 'bench', amountCents: 1234 }),
      });
      if (probe.status !== 201) {
        const skipped = `POST /orders answered ${probe.status}, not 201 (${(await probe.text()).slice(0, 200)}): the orders endpoints are not ready`;
        log(`  skipped: ${skipped}`);
        return { skipped };
      }
      const connections = 10;
      const seconds = ctx.size(15, 3);
      const { result, flowsCompleted } = await load(base, auth, connections, seconds);
      const ordersFinished = await withClient(url, async (c) =>
        Number(
          (await c.query(`SELECT count(*) AS n FROM orders WHERE status = 'FINISHED'`)).rows[0].n,
        ),
      );
      return {
        connections,
        seconds,
        requests: result.requests.total,
        requestsPerSecond: result.requests.average,
        latencyMs: {
          p50: result.latency.p50,
          p90: result.latency.p90,
          p99: result.latency.p99,
          max: result.latency.max,
        },
        non2xx: result.non2xx,
        errors: result.errors + result.timeouts,
        flowsCompleted,
        ordersFinished,
      };
    } catch (error) {
      const skipped = `the app could not be benchmarked: ${error instanceof Error ? error.message : String(error)}`;
      log(`  skipped: ${skipped}`);
      return { skipped };
    } finally {
      if (!exitedWith) {
        const exited = new Promise((resolve) => app.once('exit', resolve));
        app.kill('SIGTERM');
        await Promise.race([exited, sleep(15_000)]);
        if (!exitedWith) app.kill('SIGKILL');
      }
      await dropDatabase(database);
    }
  },
  markdown(r) {
    if ('skipped' in r) return `Skipped: ${r.skipped}`;
    return (
      table(
        [
          'connections',
          'requests',
          'requests/s',
          'create+pay+finish flows/s',
          'latency p50',
          'p90',
          'p99',
          'max',
          'non-2xx',
          'errors',
        ],
        [
          [
            r.connections,
            r.requests,
            r.requestsPerSecond,
            num(r.flowsCompleted / r.seconds),
            `${r.latencyMs.p50} ms`,
            `${r.latencyMs.p90} ms`,
            `${r.latencyMs.p99} ms`,
            `${r.latencyMs.max} ms`,
            r.non2xx,
            r.errors,
          ],
        ],
      ) + `\n\n${num(r.ordersFinished)} orders ended FINISHED in the database.`
    );
  },
};
