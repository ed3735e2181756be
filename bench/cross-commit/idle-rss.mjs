// Idle RSS of one engine build, by a script that every build runs unchanged
// (the bench harness changes with the engine): copy it into the root of a
// worktree of the commit to measure, so that 'nest-delay', Nest and TypeORM
// resolve from that worktree, and run it there on a fresh database:
//   node --expose-gc idle-rss.mjs <project|floor> <databaseUrl> [out.heapsnapshot]
// `project`: TypeORM with the engine's migrations, DelayModule.forRoot({ tickMs:
// 1000, concurrency: 10 }), one handler, and 50,000 tasks due in an hour
// (scheduleMany, 1,000 a call), as the bench's `idle` schedules them; `floor`:
// the same app without DelayModule. After 33 s at rest it prints RSS as the OS
// sees it (no forced GC; every 10 s too), after three full GCs, and after
// V8's low-memory GC (the bench's "RSS at rest"), with the heap beside each.
/* global setInterval, clearInterval, global */
import 'reflect-metadata';
import { Session } from 'node:inspector';
import { writeHeapSnapshot } from 'node:v8';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';

const [mode, url, snapshot] = process.argv.slice(2);
const pending = 50_000;
const restMs = Number(process.env.IDLE_REST_MS ?? 33_000);
const mib = (bytes) => +(bytes / 2 ** 20).toFixed(1);

const delay = mode === 'project' ? await import('nest-delay') : null;
const imports = [
  TypeOrmModule.forRoot({
    type: 'postgres',
    url,
    migrations: delay ? [...delay.delayMigrations] : [],
    migrationsRun: true,
    migrationsTransactionMode: 'each',
    poolSize: 10,
    extra: { max: 10 },
    logging: false,
    retryAttempts: 0,
  }),
];
class Handlers {
  effect() {}
}
class App {}
if (delay) {
  Injectable()(Handlers);
  const method = Object.getOwnPropertyDescriptor(Handlers.prototype, 'effect');
  delay.DelayedTaskHandler('bench.effect')(Handlers.prototype, 'effect', method);
  imports.push(delay.DelayModule.forRoot({ tickMs: 1000, concurrency: 10 }));
}
Module({ imports, providers: delay ? [Handlers] : [] })(App);
const app = await NestFactory.createApplicationContext(App, { logger: ['error'] });
if (delay) {
  const service = app.get(delay.DelayService);
  const runAt = Date.now() + 3_600_000;
  for (let from = 0; from < pending; from += 1000)
    await service.scheduleMany(
      Array.from({ length: 1000 }, (_, i) => ({
        type: 'bench.effect',
        payload: { orderId: from + i + 1 },
        runAt,
      })),
    );
}
const everyTenSeconds = [];
const sampler = setInterval(() => everyTenSeconds.push(mib(process.memoryUsage().rss)), 10_000);
await new Promise((resolve) => setTimeout(resolve, restMs));
clearInterval(sampler);
const asSeen = process.memoryUsage();
for (let i = 0; i < 3; i++) global.gc();
const afterFullGc = process.memoryUsage();
const session = new Session();
session.connect();
await new Promise((resolve, reject) =>
  session.post('HeapProfiler.collectGarbage', (error) => (error ? reject(error) : resolve())),
);
session.disconnect();
const atRest = process.memoryUsage();
console.log(
  JSON.stringify({
    mode,
    rssAsSeenMiB: mib(asSeen.rss),
    rssEvery10sMiB: everyTenSeconds,
    heapAsSeenMiB: mib(asSeen.heapUsed),
    rssAfterFullGcMiB: mib(afterFullGc.rss),
    rssAtRestMiB: mib(atRest.rss),
    heapAtRestMiB: mib(atRest.heapUsed),
    externalMiB: mib(atRest.external),
  }),
);
if (snapshot) writeHeapSnapshot(snapshot);
await app.close();
process.exit(0);
