/**
 * A Postgres cluster of the long bench's own (initdb/pg_ctl as the `postgres`
 * user, a free port, a temporary folder): the bench restarts it, holds its
 * xmin and fills its connection slots, which it must never do to a shared server.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../harness/free-port.js';

const BIN_ROOT = '/usr/lib/postgresql';

export interface Cluster {
  /** URL of the `postgres` database; `urlOf` gives any other. */
  url: string;
  urlOf(database: string): string;
  stop(): void;
  start(): void;
  destroy(): void;
  /** Whether pg_stat_statements is loaded (statements per second are counted only then). */
  statements: boolean;
  /**
   * CPU ms the server's processes used so far (Linux /proc): the postmaster's
   * own and its reaped children's, and each live child's. Null where /proc
   * cannot tell (not Linux, or the server is down).
   */
  cpuMs(): number | null;
}

/** utime + stime (and, with `reaped`, cutime + cstime) of a process, in clock ticks. */
function ticksOf(pid: string, reaped: boolean): { ticks: number; ppid: string } | null {
  try {
    // Fields after the command's closing parenthesis: state, ppid, ... utime is the 12th.
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    const own = Number(f[11]) + Number(f[12]);
    return { ticks: reaped ? own + Number(f[13]) + Number(f[14]) : own, ppid: f[1] };
  } catch {
    return null;
  }
}

/** Linux reports CPU in clock ticks of 100 a second (USER_HZ) on every platform it runs on here. */
const TICK_MS = 10;

function serverCpuMs(data: string): number | null {
  let postmaster: string;
  try {
    postmaster = readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0].trim();
  } catch {
    return null;
  }
  const own = ticksOf(postmaster, true);
  if (!own) return null;
  let ticks = own.ticks;
  for (const pid of readdirSync('/proc').filter((name) => /^[0-9]+$/.test(name))) {
    const child = ticksOf(pid, false);
    if (child?.ppid === postmaster) ticks += child.ticks;
  }
  return ticks * TICK_MS;
}

function serverBin(): string {
  const versions = existsSync(BIN_ROOT)
    ? readdirSync(BIN_ROOT).filter((v) => existsSync(join(BIN_ROOT, v, 'bin', 'initdb')))
    : [];
  if (versions.length === 0)
    throw new Error(`no initdb under ${BIN_ROOT}/*/bin: install the Postgres server package`);
  versions.sort((a, b) => Number(b) - Number(a));
  return join(BIN_ROOT, versions[0], 'bin');
}

function asPostgres(bin: string, tool: string, args: string[]): void {
  const root = process.getuid?.() === 0;
  const [command, argv] = root
    ? ['runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]]
    : [join(bin, tool), args];
  const result = spawnSync(command, argv, { encoding: 'utf8', timeout: 120_000 });
  if (result.status !== 0)
    throw new Error(`${tool} ${args.join(' ')} failed: ${result.stderr || result.stdout}`);
}


/**
 * max_connections leaves room for the 300 idle connections of pool-exhaustion
 * beside the systems' pools; autovacuum stays on, as a team's server has it.
 */
export async function startCluster(): Promise<Cluster> {
  const bin = serverBin();
  const dir = mkdtempSync(join(tmpdir(), 'nest-delay-long-'));
  chmodSync(dir, 0o777);
  const data = join(dir, 'data');
  const port = await freePort();
  asPostgres(bin, 'initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const statements = existsSync(join(bin, '..', 'lib', 'pg_stat_statements.so'));
  const options = [
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
    '-c max_connections=500 -c shared_buffers=256MB',
    statements ? '-c shared_preload_libraries=pg_stat_statements' : '',
  ].join(' ');
  const start = () =>
    asPostgres(bin, 'pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', 'start']);
  start();
  const urlOf = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;
  return {
    url: urlOf('postgres'),
    urlOf,
    statements,
    cpuMs: () => serverCpuMs(data),
    start,
    stop: () => asPostgres(bin, 'pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']),
    destroy() {
      try {
        asPostgres(bin, 'pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
