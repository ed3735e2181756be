// How a burst of expirations drains beside HTTP reads (README, "Limits on the order
// tasks"; docs/close-burst.md). After `npm run build`:
//
//   node scripts/measure-close-burst.mjs [orders] [--close-limit=N] [--no-http] [--wait-notifications]
//
// On the server of TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test)
// it creates a database, starts the compiled app (pool 10, defaults otherwise), creates
// `orders` orders (3,000), stops the app, moves every close-unpaid task to the same
// instant 12 s ahead, starts the app again and, unless --no-http, reads one order over
// 10 connections (autocannon) until the last close has run. --close-limit=N first sets
// a shared concurrency limit of N on the closes at run time (the admin API), as the
// app's default was until issue 27. Prints one JSON line: how long the closes took
// from their due time, closes/s, their lateness (p50, p99, max, ms), HTTP requests
// and latency (ms), the most connections of the database seen busy (in a transaction
// or a statement; sampled every 20 ms), and the customer notifications the closes
// scheduled: how many were sent by the last close, and (after all of them with
// --wait-notifications) how many, over how long, and the most in any one second by
// their events' times (they are limited to NOTIFY_RATE_PER_SECOND, 20, and go on
// after the closes). Then drops the database.
/* global fetch */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { URL } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import { issueToken } from '../dist/src/auth/issue-token.js';

const args = process.argv.slice(2);
const withHttp = !args.includes('--no-http');
const waitNotifications = args.includes('--wait-notifications');
const closeLimit = args.find((arg) => arg.startsWith('--close-limit='))?.split('=')[1];
const [orders = '3000'] = args.filter((arg) => !arg.startsWith('--'));
const N = Number(orders);
const ADMIN_TOKEN = 'measure-close-burst-admin-token-0123456789';
// The orders API's users' tokens: a secret of this run, and one user's token.
const AUTH_JWT_SECRET = randomBytes(32).toString('hex');
const AUTHORIZATION = `Bearer ${await issueToken({ userId: 'burst', admin: false, expires: '1d' }, { AUTH_JWT_SECRET })}`;
const server = new URL(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test');
const name = `close_burst_${process.pid}`;
const url = Object.assign(new URL(server), { pathname: `/${name}` }).toString();
const port = 39_000 + (process.pid % 1_000);
const base = `http://127.0.0.1:${port}`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function onServer(sql) {
  const client = new pg.Client({ connectionString: server.toString() });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function startApp() {
  return spawn(process.execPath, ['dist/src/main.js'], {
    env: {
      ...process.env,
      DATABASE_URL: url,
      PORT: String(port),
      DB_POOL_SIZE: '10',
      LOG_LEVEL: 'warn',
      ORDER_PAYMENT_TIMEOUT: '1h',
      ORDER_IDEMPOTENCY_PURGE_EVERY: 'off',
      ADMIN_TOKEN,
      AUTH_JWT_SECRET,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

async function serving() {
  for (let tries = 0; tries < 300; tries++) {
    try {
      await fetch(`${base}/orders?limit=1`);
      return;
    } catch {
      await sleep(200);
    }
  }
  throw new Error('the app did not answer within 60 s');
}

const stop = (app) =>
  new Promise((resolve) => {
    app.on('exit', resolve);
    app.kill('SIGTERM');
  });

await onServer(`CREATE DATABASE ${name}`);
try {
  let app = startApp();
  await serving();
  const ids = [];
  let made = 0;
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      while (made < N) {
        made++;
        const res = await fetch(`${base}/orders`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: AUTHORIZATION },
          body: JSON.stringify({ userId: 'burst', amountCents: 100 }),
        });
        ids.push((await res.json()).id);
      }
    }),
  );
  await stop(app);

  const db = new pg.Client({ connectionString: url });
  await db.connect();
  await db.query(
    `UPDATE delayed_task SET due_at = date_trunc('second', now()) + interval '12 s', locked_by = NULL
     WHERE type = 'order.close-unpaid'`,
  );
  const [{ due }] = (
    await db.query(`SELECT min(due_at) AS due FROM delayed_task WHERE type = 'order.close-unpaid'`)
  ).rows;
  app = startApp();
  await serving();
  if (closeLimit !== undefined) {
    const res = await fetch(`${base}/admin/api/types/order.close-unpaid/limit`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
      body: JSON.stringify({ concurrency: Number(closeLimit) }),
    });
    if (!res.ok) throw new Error(`setting the close limit: ${res.status} ${await res.text()}`);
  }

  const watch = new pg.Client({ connectionString: url });
  await watch.connect();
  let busy = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const { rows } = await watch.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = $1 AND state IN ('active', 'idle in transaction') AND pid <> pg_backend_pid()`,
        [name],
      );
      busy = Math.max(busy, rows[0].n);
      await sleep(20);
    }
  })();
  await sleep(Math.max(0, new Date(due).getTime() - Date.now() - 500));
  const probe = withHttp
    ? autocannon({
        url: `${base}/orders/${ids[0]}`,
        headers: { authorization: AUTHORIZATION },
        connections: 10,
        amount: 1e9,
        timeout: 10,
      })
    : undefined;
  for (;;) {
    const { rows } = await db.query(
      `SELECT count(*)::int AS n FROM delayed_task WHERE type = 'order.close-unpaid' AND executed_at IS NULL`,
    );
    if (rows[0].n === 0) break;
    await sleep(50);
  }
  let http;
  if (probe) {
    const done = new Promise((resolve) => probe.on('done', resolve));
    probe.stop();
    const res = await done;
    http = {
      requests: res.requests.total,
      p50Ms: res.latency.p50,
      p99Ms: res.latency.p99,
      maxMs: res.latency.max,
      non2xx: res.non2xx,
    };
  }
  sampling = false;
  await sampler;
  const [drain] = (
    await db.query(
      `SELECT extract(epoch FROM max(executed_at) - min(due_at)) * 1000 AS ms
       FROM delayed_task WHERE type = 'order.close-unpaid'`,
    )
  ).rows;
  const drainMs = Math.round(Number(drain.ms));
  const [late] = (
    await db.query(
      `SELECT percentile_cont(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY ms) AS p, max(ms) AS max
       FROM (SELECT extract(epoch FROM executed_at - due_at) * 1000 AS ms
             FROM delayed_task WHERE type = 'order.close-unpaid') AS lateness`,
    )
  ).rows;
  const notifiedAt = async () =>
    (
      await db.query(
        `SELECT extract(epoch FROM at) * 1000 AS ms FROM order_event
         WHERE type = 'CUSTOMER_NOTIFIED' ORDER BY at`,
      )
    ).rows.map((row) => Number(row.ms));
  let sentAt = await notifiedAt();
  const sentByDrain = sentAt.length;
  // Notifications still pending when the wait gave up: id, due time, holder.
  let unsent = [];
  if (waitNotifications) {
    // Long enough for N at the default rate, and for a heartbeat's loader round after it.
    const giveUpAt = Date.now() + (N / 20) * 1000 + 60_000;
    for (;;) {
      ({ rows: unsent } = await db.query(
        `SELECT id, due_at, locked_by, attempts FROM delayed_task
         WHERE type = 'order.notify-closed' AND executed_at IS NULL AND dead_at IS NULL`,
      ));
      if ((unsent.length === 0 && sentAt.length >= N) || Date.now() > giveUpAt) break;
      await sleep(200);
      sentAt = await notifiedAt();
    }
  }
  // The most notifications recorded in any window of one second (by their events' times).
  let most = 0;
  for (let i = 0, j = 0; j < sentAt.length; j++) {
    while (sentAt[j] - sentAt[i] >= 1000) i++;
    most = Math.max(most, j - i + 1);
  }
  console.log(
    JSON.stringify({
      closeLimit: closeLimit ?? 'none',
      orders: N,
      drainMs,
      closesPerSecond: Math.round(N / (drainMs / 1000)),
      lateness: {
        p50Ms: Math.round(late.p[0]),
        p99Ms: Math.round(late.p[1]),
        maxMs: Math.round(Number(late.max)),
      },
      http,
      httpPerSecond: http && Math.round(http.requests / (drainMs / 1000)),
      mostBusyConnections: busy,
      notifications: {
        sentByLastClose: sentByDrain,
        sent: sentAt.length,
        spanMs: sentAt.length > 1 ? Math.round(sentAt.at(-1) - sentAt[0]) : 0,
        mostInAnySecond: most,
        ...(unsent.length > 0 && { unsentWhenTheWaitGaveUp: unsent }),
      },
    }),
  );
  await stop(app);
  await db.end();
  await watch.end();
} finally {
  await onServer(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}
