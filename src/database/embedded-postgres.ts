import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

/**
 * A real Postgres (PGlite, Postgres compiled to WASM) served on a loopback port,
 * so the app talks to it through the same `pg` driver it uses for a server.
 *
 * PGlite runs one connection at a time: callers must use a pool of one and never
 * hold a transaction while waiting on a second connection (it would wait forever).
 */
export interface EmbeddedPostgres {
  /** A `postgres://` URL for the `pg` driver. */
  readonly url: string;
  /** Where the data lives, or `memory://` for a throwaway database. */
  readonly dataDir: string;
  stop(): Promise<void>;
}

export async function startEmbeddedPostgres(dataDir: string): Promise<EmbeddedPostgres> {
  if (!dataDir.startsWith('memory://')) mkdirSync(dataDir, { recursive: true });
  const db = await PGlite.create(dataDir);
  // More than one socket may be open (a pool that is closing while the next one
  // connects, a migration CLI); PGlite still runs one statement stream at a time
  // and keeps a transaction's statements together, which is why the app's pool is one.
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 8 });
  await server.start();
  const address = server.getServerConn();
  let stopped = false;
  return {
    url: `postgres://postgres@${address}/postgres`,
    dataDir,
    async stop() {
      if (stopped) return;
      stopped = true;
      await server.stop();
      await db.close();
    },
  };
}
