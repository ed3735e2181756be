import { randomBytes } from 'node:crypto';
import pg from 'pg';
import {
  startEmbeddedPostgres,
  type EmbeddedPostgres,
} from '../../src/database/embedded-postgres.js';

/**
 * One database per test file: on the server in TEST_DATABASE_URL (created
 * here, dropped in `drop()`), or an in-memory PGlite when it is unset. When
 * TEST_DATABASE_URL is a pooler (`npm run test:pgbouncer`), databases are
 * created and dropped on the server itself, TEST_ADMIN_DATABASE_URL.
 */
export interface TestDatabase {
  url: string;
  /** A real server: several connections and processes work. PGlite: one connection. */
  isServer: boolean;
  poolSize: number;
  drop(): Promise<void>;
}

export const serverUrl = process.env.TEST_DATABASE_URL;
/**
 * What the apps under test get for DELAY_PREPARED_STATEMENTS: the pass
 * through PgBouncer 1.18 (`npm run test:pgbouncer`) sets 'false', as the docs
 * tell users of a pooler without prepared statements; otherwise the app's default.
 */
export const preparedStatementsEnv: Record<string, string> = process.env.DELAY_PREPARED_STATEMENTS
  ? { DELAY_PREPARED_STATEMENTS: process.env.DELAY_PREPARED_STATEMENTS }
  : {};
/** Where databases are created, dropped and watched: the server, never a pooler in front of it. */
export const adminUrl = process.env.TEST_ADMIN_DATABASE_URL ?? serverUrl;
/** Test databases are reached through a pooler: the server's sessions are the pooler's, not the app's. */
export const behindPooler = adminUrl !== serverUrl;

export async function createTestDatabase(): Promise<TestDatabase> {
  if (!serverUrl) {
    const embedded: EmbeddedPostgres = await startEmbeddedPostgres('memory://');
    return { url: embedded.url, isServer: false, poolSize: 1, drop: () => embedded.stop() };
  }
  const name = `t_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    isServer: true,
    poolSize: 10,
    async drop() {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/** `describe` for tests that need a real server (several connections or processes). */
export const describeWithServer: jest.Describe = serverUrl
  ? describe
  : (((name: string, fn: () => void) =>
      describe.skip(
        `${name} (skipped: needs TEST_DATABASE_URL, a Postgres server)`,
        fn,
      )) as unknown as jest.Describe);
