import { findPgbouncer, startPgbouncer, type PrivatePgbouncer } from '../../scripts/pgbouncer.mjs';
import { adminUrl } from './test-database.js';

export { startPgbouncer, type PrivatePgbouncer };

/**
 * `describe`, or `describe.skip` with the reason when there is no pgbouncer
 * binary or no Postgres server to put it in front of.
 */
export const describeWithPgbouncer: jest.Describe = (() => {
  const missing = !adminUrl
    ? 'needs TEST_DATABASE_URL, a Postgres server'
    : findPgbouncer().missing;
  if (!missing) return describe;
  return ((name: string, fn: () => void) =>
    describe.skip(`${name} (skipped: ${missing})`, fn)) as unknown as jest.Describe;
})();

/** A database's URL on the server, reached through `pgbouncer` instead. */
export function throughPgbouncer(pgbouncer: PrivatePgbouncer, databaseUrl: string): string {
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(pgbouncer.port);
  return url.toString();
}
