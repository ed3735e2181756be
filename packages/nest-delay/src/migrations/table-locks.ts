import type { MigrationRunner } from './migration-runner.js';

/** lock_not_available: the lock was not granted within lock_timeout. */
const LOCK_NOT_AVAILABLE = '55P03';

/**
 * Takes the ACCESS EXCLUSIVE locks a migration's ALTERs need, all at once,
 * before it changes anything. Each try waits at most `waitMs` (claims queued
 * behind it wait no longer), then lets go and tries again later, so it never
 * closes a cycle with a claim (delayed_task, then delay_schedule) or a plan
 * (the other way round). Fails, naming the tables, after `giveUpMs`.
 */
export async function lockTables(
  runner: MigrationRunner,
  tables: string[],
  { waitMs = 100, giveUpMs = 300_000 }: { waitMs?: number; giveUpMs?: number } = {},
): Promise<void> {
  // Outside a transaction (migrationsTransactionMode 'none') a lock would end with its statement.
  if (!runner.isTransactionActive) return;
  const startedMs = Date.now();
  for (let attempt = 0; ; attempt++) {
    await runner.query(`SAVEPOINT delay_migration_locks`);
    try {
      await runner.query(`SET LOCAL lock_timeout = '${Math.round(waitMs)}ms'`);
      await runner.query(`LOCK TABLE ${tables.join(', ')} IN ACCESS EXCLUSIVE MODE`);
      await runner.query(`RELEASE SAVEPOINT delay_migration_locks`);
      // The locks are held to COMMIT; the migration's own statements wait as usual.
      await runner.query(`SET LOCAL lock_timeout TO DEFAULT`);
      return;
    } catch (error) {
      const code =
        (error as { code?: string }).code ??
        (error as { driverError?: { code?: string } }).driverError?.code;
      if (code !== LOCK_NOT_AVAILABLE) throw error;
      // Lets go of any lock this try got (and of its lock_timeout).
      await runner.query(`ROLLBACK TO SAVEPOINT delay_migration_locks`);
      if (Date.now() - startedMs > giveUpMs) {
        throw new Error(
          `Could not lock ${tables.join(', ')} for ${Math.round(giveUpMs / 1000)} s: other transactions kept them locked (a long transaction on them, or instances claiming without a pause); run the migration again`,
          { cause: error },
        );
      }
      // 50 ms, 100, … up to a second, with jitter: claims go on in between.
      const pauseMs = Math.min(1000, 50 * 2 ** Math.min(attempt, 5));
      await new Promise((resolve) => setTimeout(resolve, pauseMs / 2 + Math.random() * pauseMs));
    }
  }
}
