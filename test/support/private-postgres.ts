import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../app/app-process.js';

/**
 * A Postgres cluster of a test's own, in a temporary folder on a free port,
 * run by the machine's server binaries as the `postgres` user: a test can
 * stop, start or abuse it without touching anyone else's database.
 */
export interface PrivatePostgres {
  url: string;
  stop(): void;
  start(): void;
  destroy(): void;
}

const BIN_ROOT = '/usr/lib/postgresql';

/** The bin folder of the newest installed server, or why there is none. */
export function findServerBinaries(): { bin?: string; missing?: string } {
  if (!existsSync(BIN_ROOT)) return { missing: `no ${BIN_ROOT} (Postgres server binaries)` };
  const versions = readdirSync(BIN_ROOT)
    .filter((v) => existsSync(join(BIN_ROOT, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  if (versions.length === 0) return { missing: `no initdb under ${BIN_ROOT}/*/bin` };
  if (process.getuid?.() !== 0 && process.env.USER !== 'postgres') {
    return { missing: 'not root, so the cluster cannot be run as the postgres user' };
  }
  return { bin: join(BIN_ROOT, versions[0], 'bin') };
}

/** Runs a server binary as the `postgres` user (through runuser when this is root). */
export function asPostgres(bin: string, tool: string, args: string[]): void {
  const asRoot = process.getuid?.() === 0;
  const command = asRoot ? 'runuser' : join(bin, tool);
  const argv = asRoot ? ['-u', 'postgres', '--', join(bin, tool), ...args] : args;
  const result = spawnSync(command, argv, { encoding: 'utf8', timeout: 60_000 });
  if (result.status !== 0) {
    throw new Error(`${tool} ${args.join(' ')} failed: ${result.stderr || result.stdout}`);
  }
}

/** `settings`: more server parameters for its command line (ssl, ssl_cert_file, hba_file...). */
export async function startPrivatePostgres(
  settings: Record<string, string> = {},
): Promise<PrivatePostgres> {
  const { bin, missing } = findServerBinaries();
  if (!bin) throw new Error(missing);
  const dir = mkdtempSync(join(tmpdir(), 'nest-delay-pg-'));
  chmodSync(dir, 0o777);
  const data = join(dir, 'data');
  const port = await freePort();
  asPostgres(bin, 'initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const options = [
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
    ...Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`),
  ].join(' ');
  const start = () =>
    asPostgres(bin, 'pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', 'start']);
  start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop: () => asPostgres(bin, 'pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']),
    start,
    destroy() {
      try {
        asPostgres(bin, 'pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch {
        // Already stopped.
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** `describe`, or `describe.skip` with the reason when no private cluster can run here. */
export const describeWithPrivatePostgres: jest.Describe = (() => {
  const { missing } = findServerBinaries();
  if (!missing) return describe;
  return ((name: string, fn: () => void) =>
    describe.skip(`${name} (skipped: ${missing})`, fn)) as unknown as jest.Describe;
})();
