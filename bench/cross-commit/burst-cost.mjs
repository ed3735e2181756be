// A burst's cost for one engine build, by a script every build runs unchanged:
// copy it into the root of a worktree of the commit to measure (see
// idle-rss.mjs) and run it there on a fresh database:
//   node burst-cost.mjs <databaseUrl> [count] [typeorm|none]
// The bench's project app (TypeORM with the engine's migrations,
// DelayModule.forRoot({ tickMs: 1000, concurrency: 10 })), `count` tasks
// (10,000) due at one whole second, scheduled ahead with scheduleMany; the
// handler runs the bench's effect through the claim's manager (`typeorm`) or
// does nothing (`none`: the engine's own cost). From the first scheduleMany
// to the last effect: drain (last effect − due time), CPU µs per task of this
// process (scheduling included, as the bench counts it) and of the database's
// backends (/proc/<pid>/stat: Postgres on this host).
import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import * as delay from 'nest-delay';

const [url, countArg, handlerArg] = process.argv.slice(2);
const count = Number(countArg ?? 10_000);
const handler = handlerArg ?? 'typeorm';
const EFFECT = `UPDATE bench_order SET stars = 5, effects = effects + 1, effected_at = clock_timestamp() WHERE id = $1`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let handled = 0;
let lastHandledMs = 0;
class Handlers {
  async effect(payload, { manager }) {
    if (handler === 'typeorm') await manager.query(EFFECT, [payload.orderId]);
    handled++;
    lastHandledMs = Date.now();
  }
}
Injectable()(Handlers);
const method = Object.getOwnPropertyDescriptor(Handlers.prototype, 'effect');
delay.DelayedTaskHandler('bench.effect')(Handlers.prototype, 'effect', method);
class App {}
Module({
  imports: [
    TypeOrmModule.forRoot({
      type: 'postgres',
      url,
      migrations: [...delay.delayMigrations],
      migrationsRun: true,
      migrationsTransactionMode: 'each',
      poolSize: 10,
      extra: { max: 10 },
      logging: false,
      retryAttempts: 0,
    }),
    delay.DelayModule.forRoot({ tickMs: 1000, concurrency: 10 }),
  ],
  providers: [Handlers],
})(App);
const app = await NestFactory.createApplicationContext(App, { logger: ['error'] });

const client = new pg.Client(url);
await client.connect();
// As the bench's lead time: room to seed and schedule before the due second.
const dueMs = Math.ceil((Date.now() + 1500 + count / 50 + count / 10) / 1000) * 1000;
await client.query(`CREATE TABLE bench_order (id bigint PRIMARY KEY, due_at timestamptz NOT NULL,
  stars smallint, effects integer NOT NULL DEFAULT 0, effected_at timestamptz)`);
await client.query(
  `INSERT INTO bench_order (id, due_at) SELECT g, to_timestamp($2::float8 / 1000) FROM generate_series(1, $1::int) g`,
  [count, dueMs],
);
await client.query('ANALYZE bench_order');

const ticksOf = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(fields[11]) + Number(fields[12]);
};
const backends = async () =>
  (
    await client.query(
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
    )
  ).rows.map((row) => row.pid);
const ticksAtStart = new Map();
for (const pid of await backends()) ticksAtStart.set(pid, ticksOf(pid));

const service = app.get(delay.DelayService);
const cpuAtStart = process.cpuUsage();
for (let from = 1; from <= count; from += 1000)
  await service.scheduleMany(
    Array.from({ length: Math.min(1000, count - from + 1) }, (_, i) => ({
      type: 'bench.effect',
      payload: { orderId: from + i },
      runAt: dueMs,
    })),
  );
while (handled < count) await sleep(20);
const cpu = process.cpuUsage(cpuAtStart);
let serverTicks = 0;
for (const pid of await backends()) serverTicks += ticksOf(pid) - (ticksAtStart.get(pid) ?? 0);

await sleep(200);
const { rows } = await client.query(
  `SELECT (extract(epoch FROM max(effected_at)) * 1000 - $1)::int AS drain,
          count(*) FILTER (WHERE effects > 1)::int AS duplicates
   FROM bench_order`,
  [dueMs],
);
console.log(
  JSON.stringify({
    handler,
    count,
    drainMs: handler === 'typeorm' ? rows[0].drain : lastHandledMs - dueMs,
    duplicates: rows[0].duplicates,
    cpuUsPerTask: Math.round((cpu.user + cpu.system) / count),
    // Clock ticks are 10 ms (CLK_TCK 100).
    serverUsPerTask: Math.round((serverTicks * 10_000) / count),
  }),
);
await client.end();
await app.close();
process.exit(0);
