/**
 * `npm run migration:run` / `migration:revert`: the operators' way to move the
 * schema by hand, with the same DataSource definition the app uses.
 */
import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { loadConfig } from '../config/app-config.js';
import { dataSourceOptions } from './data-source-options.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres.js';

async function main(command: string | undefined): Promise<void> {
  if (command !== 'run' && command !== 'revert' && command !== 'show') {
    throw new Error(`usage: migrate.js run|revert|show (got ${command ?? 'nothing'})`);
  }
  const config = loadConfig();
  let embedded: EmbeddedPostgres | undefined;
  const url = config.databaseUrl ?? (embedded = await startEmbeddedPostgres(config.pgliteDir)).url;
  const dataSource = new DataSource(dataSourceOptions({ url, poolSize: 1 }));
  try {
    await dataSource.initialize();
    if (command === 'run') {
      const applied = await dataSource.runMigrations({ transaction: 'each' });
      console.log(
        applied.length
          ? `Applied: ${applied.map((m) => m.name).join(', ')}`
          : 'No pending migrations.',
      );
    } else if (command === 'revert') {
      await dataSource.undoLastMigration({ transaction: 'each' });
      console.log('Reverted the last migration.');
    } else {
      console.log(
        (await dataSource.showMigrations())
          ? 'There are pending migrations.'
          : 'No pending migrations.',
      );
    }
  } finally {
    if (dataSource.isInitialized) await dataSource.destroy();
    await embedded?.stop();
  }
}

main(process.argv[2]).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
