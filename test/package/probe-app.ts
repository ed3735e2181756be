import { join } from 'node:path';

// The probe app of the pack-install test: the smallest foreign Nest app that
// boots the module from the tarball, runs one task for real and exits.

/** What it installs beside the tarball, at the repo's locked versions. */
export const PROBE_APP_DEPS = [
  '@nestjs/common',
  '@nestjs/core',
  '@nestjs/typeorm',
  'typeorm',
  'pg',
  'reflect-metadata',
  'rxjs',
];

/** The foreign app, as a user would write it: nothing from this repo but the tarball. */
export function probeAppSources(root: string): Record<string, string> {
  return {
    // Only Node's own types come from the repo: the app installs no @types/node.
    'tsconfig.json': `{
  "compilerOptions": {
    "target": "ES2022", "module": "NodeNext", "moduleResolution": "NodeNext", "lib": ["ES2023"],
    "strict": true, "experimentalDecorators": true, "emitDecoratorMetadata": true,
    "skipLibCheck": true, "rootDir": "src", "outDir": "dist",
    "typeRoots": [${JSON.stringify(join(root, 'node_modules/@types'))}], "types": ["node"]
  },
  "include": ["src"]
}`,
    'src/probe.handler.ts': `
import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { DelayedTaskHandler } from 'nest-delay';

@Injectable()
export class ProbeHandler {
  @DelayedTaskHandler('probe.ping')
  async ping(_payload: unknown, context: { manager: EntityManager; task: { id: string } }): Promise<void> {
    await context.manager.query('INSERT INTO probe_effect(task_id) VALUES ($1)', [context.task.id]);
  }
}
`,
    'src/app.module.ts': `
import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DelayModule, delayMigrations } from 'nest-delay';
import { ProbeHandler } from './probe.handler.js';

@Module({
  imports: [
    TypeOrmModule.forRoot({ type: 'postgres', url: process.env.DATABASE_URL, migrations: [...delayMigrations], migrationsRun: true, retryAttempts: 0 }),
    DelayModule.forRoot({ tickMs: 50 }),
  ],
  providers: [ProbeHandler],
})
export class AppModule {}
`,
    'src/main.ts': `
import 'reflect-metadata';
import { setTimeout as sleep } from 'node:timers/promises';
import { NestFactory } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { DelayService } from 'nest-delay';
import { AppModule } from './app.module.js';

const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
app.enableShutdownHooks();
const db = app.get(DataSource);
await db.query('CREATE TABLE IF NOT EXISTS probe_effect (task_id bigint NOT NULL)');
const delay = app.get(DelayService);
const task = await delay.schedule({ type: 'probe.ping', delay: 200 });
const effects = async (): Promise<number> => (await db.query('SELECT count(*)::int AS n FROM probe_effect'))[0].n;
const deadline = Date.now() + 20_000;
while ((await effects()) < 1 && Date.now() < deadline) await sleep(50);
// Long enough for a second, wrong run of the same task to show up.
await sleep(500);
const [row] = await db.query('SELECT executed_at FROM delayed_task WHERE id = $1', [task.id]);
console.log(JSON.stringify({ effects: await effects(), state: row?.executed_at ? 'executed' : 'not executed' }));
await app.close();
`,
  };
}

/** The same probe for an app with no TypeORM: plain pg, the engine on its own pool. */
export const PG_PROBE_APP_DEPS = [
  '@nestjs/common',
  '@nestjs/core',
  'pg',
  '@types/pg',
  'reflect-metadata',
  'rxjs',
];

/**
 * Migrates with the package's bin (`nest-delay migrate`, run by the test
 * before it starts), schedules in its own pg transaction, and writes its
 * effect through the claim's client.
 */
export function pgProbeAppSources(root: string): Record<string, string> {
  return {
    'tsconfig.json': probeAppSources(root)['tsconfig.json'],
    'src/main.ts': `
import 'reflect-metadata';
import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pg from 'pg';
import { DelayModule, DelayService, DelayedTaskHandler, type TaskContext } from 'nest-delay';
import { pgTransaction } from 'nest-delay/pg';

@Injectable()
class ProbeHandler {
  @DelayedTaskHandler('probe.ping')
  async ping(_payload: unknown, context: TaskContext): Promise<void> {
    await context.client.query('INSERT INTO probe_effect(task_id) VALUES ($1)', [context.task.id]);
  }
}

@Module({
  imports: [DelayModule.forRoot({ connection: process.env.DATABASE_URL!, tickMs: 50 })],
  providers: [ProbeHandler],
})
class AppModule {}

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
await pool.query('CREATE TABLE IF NOT EXISTS probe_effect (task_id bigint NOT NULL)');
const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
app.enableShutdownHooks();
const delay = app.get(DelayService);
const client = await pool.connect();
await client.query('BEGIN');
const task = await delay.schedule({ type: 'probe.ping', delay: 200 }, { transaction: pgTransaction(client) });
await client.query('COMMIT');
client.release();
const effects = async (): Promise<number> => (await pool.query('SELECT count(*)::int AS n FROM probe_effect')).rows[0].n;
const deadline = Date.now() + 20_000;
while ((await effects()) < 1 && Date.now() < deadline) await sleep(50);
// Long enough for a second, wrong run of the same task to show up.
await sleep(500);
const { rows: [row] } = await pool.query('SELECT executed_at FROM delayed_task WHERE id = $1', [task.id]);
console.log(JSON.stringify({ effects: await effects(), state: row?.executed_at ? 'executed' : 'not executed' }));
await app.close();
await pool.end();
`,
  };
}
