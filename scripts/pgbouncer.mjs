// A private PgBouncer for tests: a temporary folder, a free port, in front of
// one Postgres server, in the mode a managed Postgres's pooler runs in. Used
// by `npm run test:pgbouncer` (scripts/test-through-pgbouncer.mjs) and by
// the tests that go through a pooler on purpose (test/support/pgbouncer.ts).
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, chmodSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { URL } from 'node:url';

/** The pgbouncer binary, or why there is none. */
export function findPgbouncer() {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin'];
  for (const dir of dirs.filter(Boolean)) {
    const bin = join(dir, 'pgbouncer');
    try {
      accessSync(bin, constants.X_OK);
      return { bin };
    } catch {
      // Not here.
    }
  }
  return { missing: 'pgbouncer is not installed (Debian: apt-get install pgbouncer)' };
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const accepts = (port) =>
  new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => socket.end(() => resolve(true)));
    socket.once('error', () => resolve(false));
  });

/** PgBouncer refuses to run as root: then it runs as postgres (or nobody), by its -u. */
function runAs() {
  if (process.getuid?.() !== 0) return [];
  const postgres = spawnSync('id', ['-u', 'postgres']).status === 0;
  return ['-u', postgres ? 'postgres' : 'nobody'];
}

const quote = (value) => `"${value.replaceAll('"', '""')}"`;

/**
 * Starts PgBouncer in front of the server `serverUrl` names (its host, port,
 * user and password; any database, by the `*` wildcard). Resolves once it
 * accepts connections; `url` is `serverUrl` with PgBouncer's host and port.
 * `poolSize` is default_pool_size: server connections per database and user.
 */
export async function startPgbouncer({ serverUrl, poolMode = 'transaction', poolSize = 4 }) {
  const { bin, missing } = findPgbouncer();
  if (!bin) throw new Error(missing);
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username || 'postgres');
  const dir = mkdtempSync(join(tmpdir(), 'pgbouncer-'));
  chmodSync(dir, 0o755);
  const port = await freePort();
  // trust: the client is not asked for a password, but its user must be in
  // the auth file, whose password PgBouncer then uses to log in to the server.
  writeFileSync(
    join(dir, 'users.txt'),
    `${quote(user)} ${quote(decodeURIComponent(server.password))}\n`,
  );
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      `admin_users = ${user}`,
      `pool_mode = ${poolMode}`,
      `default_pool_size = ${poolSize}`,
      'max_client_conn = 1000',
      // Sent by some drivers at startup (not by pg); PgBouncer only forwards the few it tracks.
      'ignore_startup_parameters = extra_float_digits',
      // A pool too small for the work shows as an error, not as a test that hangs.
      'query_wait_timeout = 30',
      // A server that refused a login (a database being dropped) is tried again soon.
      'server_login_retry = 1',
    ].join('\n') + '\n',
  );
  const child = spawn(bin, [...runAs(), join(dir, 'pgbouncer.ini')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk.toString()));
  child.stderr.on('data', (chunk) => (output += chunk.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  // Never outlive the process that started it.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const destroy = () => rmSync(dir, { recursive: true, force: true });

  const deadline = Date.now() + 10_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      destroy();
      throw new Error(`pgbouncer did not start on port ${port}:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const url = new URL(serverUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    port,
    output: () => output,
    /** SIGTERM: PgBouncer closes every client and server connection at once. */
    async stop() {
      process.removeListener('exit', killOnExit);
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      destroy();
    },
  };
}
