import type { QueryRunner } from 'typeorm';

/** lock_not_available: the lock was not granted within lock_timeout. */
const LOCK_NOT_AVAILABLE = '55P03';

/**
 * Takes the ACCESS EXCLUSIVE locks a migration's ALTERs need, all at once,
 * before it changes anything, so it runs safely beside instances of the
 * previous release that keep claiming and planning. It never waits long
 * while holding one of them: each try waits at most `waitMs` for all of
 * them (claims queued behind it are held up no longer), then lets go of
 * what it got and tries again a little later. So it never closes a cycle
 * with a claim (which takes delayed_task before delay_schedule) or the
 * planner (the other way round): no deadlock, whichever order they lock in,
 * and no claim is chosen as a deadlock victim. Fails, naming the tables,
 * once `giveUpMs` have passed.
 */
export async function lockTables(
  runner: QueryRunner,
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
          `Could not lock ${tables.join(', ')} for ${Math.round(giveUpMs / 1000)} s: other transactions kept them busy (a long transaction on them, or instances claiming without a pause); run the migration again`,
          { cause: error },
        );
      }
      // 50 ms, 100, … up to a second, with jitter: claims go on in between.
      const pauseMs = Math.min(1000, 50 * 2 ** Math.min(attempt, 5));
      await new Promise((resolve) => setTimeout(resolve, pauseMs / 2 + Math.random() * pauseMs));
    }
  }
}
