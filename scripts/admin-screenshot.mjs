// The package README's picture of the admin page: the example app (built:
// `npm run build`) on the embedded Postgres with ADMIN_TOKEN set, two orders
// through it over HTTP, then the page in Chromium on the second order's
// timeline. Writes packages/nest-delay/docs/admin-page.png.
//
//   npm run build && node scripts/admin-screenshot.mjs [--out file.png]
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

/* global fetch */

const outArg = process.argv.indexOf('--out');
const out = outArg === -1 ? 'packages/nest-delay/docs/admin-page.png' : process.argv[outArg + 1];
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const token = randomBytes(32).toString('hex');
const port = 20_000 + Math.floor(Math.random() * 20_000);
const base = `http://127.0.0.1:${port}`;
const data = mkdtempSync(join(tmpdir(), 'admin-screenshot-'));

const app = spawn(process.execPath, ['dist/src/main.js'], {
  env: {
    PATH: process.env.PATH,
    PORT: String(port),
    PGLITE_DIR: data,
    ADMIN_TOKEN: token,
    ORDER_PAYMENT_TIMEOUT: '2s',
    DELAY_TICK_MS: '100',
    LOG_LEVEL: 'warn',
    METRICS_ENABLED: 'false',
  },
  stdio: ['ignore', 'pipe', 'pipe'],
});
let output = '';
app.stdout.on('data', (chunk) => (output += chunk));
app.stderr.on('data', (chunk) => (output += chunk));
let running = true;
const exited = new Promise((resolve) => app.on('exit', resolve)).then(() => (running = false));

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Until the app answers (it refuses connections until it listens), or exits. */
async function listening() {
  while (running) {
    if (
      await fetch(`${base}/admin`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await sleep(200);
  }
  throw new Error(`the app exited:\n${output.slice(-3000)}`);
}

async function call(method, path, body) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: body ? { 'content-type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!response.ok)
    throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

async function untilStatus(id, status) {
  for (;;) {
    if ((await call('GET', `/orders/${id}`)).status === status) return;
    await sleep(200);
  }
}

try {
  await listening();
  // One order left unpaid (its close runs 2 s later), one paid and finished
  // (its close cancelled, its automatic review still due).
  const unpaid = await call('POST', '/orders', { userId: 'u-42', amountCents: 2599 });
  const order = await call('POST', '/orders', { userId: 'u-42', amountCents: 990 });
  await call('POST', `/orders/${order.id}/pay`);
  await call('POST', `/orders/${order.id}/finish`);
  await untilStatus(unpaid.id, 'CLOSED');

  const browser = await chromium.launch({
    executablePath: chromiumPath,
    args: ['--headless', '--no-sandbox', '--disable-gpu'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1360, height: 760 } });
    page.on('dialog', (dialog) => void dialog.accept());
    await page.goto(`${base}/admin#/timeline?entity=order:${order.id}`);
    await page.fill('#token', token);
    await page.click('#login-form button[type=submit]');
    await page.waitForSelector('#timeline-body:not([hidden])');
    await page.waitForSelector('#live[data-state=on]');
    await page.screenshot({ path: out });
    console.log(`wrote ${out}`);
  } finally {
    await browser.close();
  }
} finally {
  app.kill('SIGTERM');
  await exited;
  rmSync(data, { recursive: true, force: true });
}
