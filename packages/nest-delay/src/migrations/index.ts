import type { Pool } from 'pg';
import { runMigrations, type MigrateOptions } from './migration-runner.js';
import { CreateDelayedTask1763800000000 } from './1763800000000-CreateDelayedTask.js';
import { DelayDropLockedAt1763900000000 } from './1763900000000-DelayDropLockedAt.js';
import { DelayAttempts1764000000000 } from './1764000000000-DelayAttempts.js';
import { DelayRetention1764100000000 } from './1764100000000-DelayRetention.js';
import { DelayInstanceClock1764200000000 } from './1764200000000-DelayInstanceClock.js';
import { DelayClockCorrection1764300000000 } from './1764300000000-DelayClockCorrection.js';
import { DelayTraceContext1764400000000 } from './1764400000000-DelayTraceContext.js';
import { DelaySchedules1764500000000 } from './1764500000000-DelaySchedules.js';
import { DelayLimits1764600000000 } from './1764600000000-DelayLimits.js';
import { DelayScheduleOwnership1764720000000 } from './1764720000000-DelayScheduleOwnership.js';
import { DelayDeclaredLimits1764760000000 } from './1764760000000-DelayDeclaredLimits.js';
import { DelayTaskEntity1764800000000 } from './1764800000000-DelayTaskEntity.js';
import { DelayTaskEvents1764810000000 } from './1764810000000-DelayTaskEvents.js';
import { DelayAttemptTaskIndex1764820000000 } from './1764820000000-DelayAttemptTaskIndex.js';
import { DelayAttemptUnlogged1764830000000 } from './1764830000000-DelayAttemptUnlogged.js';
import { DelayInstanceTaskTypes1764840000000 } from './1764840000000-DelayInstanceTaskTypes.js';

/**
 * The package's schema, oldest first: add them to your DataSource's
 * `migrations`. Each is a plain TypeORM migration recorded under its class
 * name, so upgrading the package and migrating moves the schema forward.
 */
export const delayMigrations = [
  CreateDelayedTask1763800000000,
  DelayDropLockedAt1763900000000,
  DelayAttempts1764000000000,
  DelayRetention1764100000000,
  DelayInstanceClock1764200000000,
  DelayClockCorrection1764300000000,
  DelayTraceContext1764400000000,
  DelaySchedules1764500000000,
  DelayLimits1764600000000,
  DelayScheduleOwnership1764720000000,
  DelayDeclaredLimits1764760000000,
  DelayTaskEntity1764800000000,
  DelayTaskEvents1764810000000,
  DelayAttemptTaskIndex1764820000000,
  DelayAttemptUnlogged1764830000000,
  DelayInstanceTaskTypes1764840000000,
];

/**
 * The package's tables without TypeORM: runs the migrations of
 * `delayMigrations` that `options.table` (default `delay_migrations`) does
 * not list yet, each in its own transaction. For apps on Prisma, Drizzle,
 * Kysely, MikroORM or plain pg: call it before the app starts (or at boot,
 * before `DelayModule` connects; several instances may call it at once), or
 * run `npx nest-delay migrate`.
 */
export function migrateDelaySchema(
  database: string | Pick<Pool, 'connect'>,
  options?: MigrateOptions,
): Promise<string[]> {
  return runMigrations(database, delayMigrations, options);
}
