/**
 * `npm run bench:scrape`: how long a /metrics scrape takes with 1,000,000
 * rows in `delayed_task` (990,000 executed, 10,000 pending two days out, past
 * the window, so none is held in memory). The app is the real one (AppModule,
 * metrics on) on a fresh bench database; the figure is reported, never
 * asserted. A scrape reads memory only, so the table's size should not show.
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { NestFactory } from '@nestjs/core';
import type { AddressInfo } from 'node:net';
import { AppModule } from '../src/app.module.js';
import { loadConfig } from '../src/config/app-config.js';
import { configureApp } from '../src/configure-app.js';
import { dropDatabase, freshDatabase, withClient } from './harness/db.js';

const ROWS = 1_000_000;
const PENDING = 10_000;
const SCRAPES = 50;

async function main(): Promise<void> {
  const name = 'bench_metrics_scrape';
  const url = await freshDatabase(name);
  const config = loadConfig({
    DATABASE_URL: url,
    LOG_LEVEL: 'warn',
    PORT: '0',
    // No request of its own reaches the orders API: a secret of this run keeps `.data/` untouched.
    AUTH_JWT_SECRET: randomBytes(32).toString('hex'),
  });
  const app = configureApp(
    await NestFactory.create(AppModule.forRoot(config, url), { logger: ['error', 'warn'] }),
  );
  try {
    await app.listen(0, '127.0.0.1');
    const started = performance.now();
    await withClient(url, async (client) => {
      await client.query(
        `INSERT INTO delayed_task (type, payload, due_at, executed_at, created_at, updated_at)
         SELECT 'order.close-unpaid', jsonb_build_object('n', n), now() - interval '1 day',
                now() - interval '1 day', now() - interval '1 day', now() - interval '1 day'
         FROM generate_series(1, $1::int) AS n`,
        [ROWS - PENDING],
      );
      await client.query(
        `INSERT INTO delayed_task (type, payload, due_at, created_at, updated_at)
         SELECT 'order.auto-review', jsonb_build_object('n', n), now() + interval '2 days', now(), now()
         FROM generate_series(1, $1::int) AS n`,
        [PENDING],
      );
      await client.query('ANALYZE delayed_task');
      const [{ n }] = (await client.query('SELECT count(*)::int AS n FROM delayed_task')).rows;
      console.log(
        `${n.toLocaleString('en-US')} rows in delayed_task (${Math.round(performance.now() - started)} ms to insert)`,
      );
    });
    const { port } = app.getHttpServer().address() as AddressInfo;
    const times: number[] = [];
    let bytes = 0;
    for (let i = 0; i < SCRAPES; i++) {
      const t0 = performance.now();
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      const text = await res.text();
      times.push(performance.now() - t0);
      bytes = text.length;
      if (!res.ok) throw new Error(`/metrics answered ${res.status}`);
    }
    times.sort((a, b) => a - b);
    const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
    console.log(
      `/metrics over ${SCRAPES} scrapes (${bytes.toLocaleString('en-US')} bytes): ` +
        `median ${at(0.5).toFixed(1)} ms, p95 ${at(0.95).toFixed(1)} ms, max ${times[times.length - 1].toFixed(1)} ms`,
    );
  } finally {
    await app.close();
    await dropDatabase(name);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
