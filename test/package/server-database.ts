import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { serverUrl } from '../support/test-database.js';

/** A database of its own on the test server, dropped by `drop()`. */
export async function serverDatabase(prefix: string) {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = async <T>(fn: (c: pg.Client) => Promise<T>, url = serverUrl): Promise<T> => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  };
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  const url = Object.assign(new URL(serverUrl!), { pathname: `/${name}` }).toString();
  return {
    url,
    query: async (sql: string, params?: unknown[]) =>
      admin(async (c) => (await c.query(sql, params)).rows, url),
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)),
  };
}
