import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../app/app-process.js';
import { asPostgres, findServerBinaries } from './private-postgres.js';

/**
 * A primary and a streaming standby of a test's own (pg_basebackup -R), with
 * synchronous replication: once the standby streams, a commit is acknowledged
 * to its client only after the standby has flushed it, so every commit a
 * client saw succeed survives a failover to the standby.
 */
export interface ReplicatedPostgres {
  primaryPort: number;
  standbyPort: number;
  /** The log of each server (where a deadlock or a crash would be told). */
  logs(): { primary: string; standby: string };
  /** `pg_ctl stop -m immediate`: the server's processes die without a checkpoint, as in a crash. */
  crashPrimary(): Promise<void>;
  /** `pg_ctl promote -w`: the standby leaves recovery and accepts writes. */
  promoteStandby(): Promise<void>;
  destroy(): void;
}

export async function startReplicatedPostgres(): Promise<ReplicatedPostgres> {
  const { bin, missing } = findServerBinaries();
  if (!bin) throw new Error(missing);
  const dir = mkdtempSync(join(tmpdir(), 'nest-delay-failover-'));
  chmodSync(dir, 0o777);
  const primaryData = join(dir, 'primary');
  const standbyData = join(dir, 'standby');
  const [primaryPort, standbyPort] = [await freePort(), await freePort()];
  const start = (data: string, port: number) =>
    asPostgres(bin, 'pg_ctl', [
      '-D',
      data,
      '-o',
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c wal_level=replica -c max_wal_senders=4`,
      '-l',
      `${data}.log`,
      '-w',
      'start',
    ]);
  const stop = (data: string) => {
    try {
      asPostgres(bin, 'pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
    } catch {
      // Not running.
    }
  };
  try {
    asPostgres(bin, 'initdb', ['-D', primaryData, '-A', 'trust', '-U', 'postgres', '--no-sync']);
    start(primaryData, primaryPort);
    asPostgres(bin, 'pg_basebackup', [
      ...['-D', standbyData, '-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres'],
      ...['-R', '-X', 'stream', '-c', 'fast', '--no-sync'],
    ]);
    start(standbyData, standbyPort);
    // Synchronous only now, and on the primary only (ALTER SYSTEM writes its own
    // data folder): the standby is promoted with nobody to wait for.
    const primary = new pg.Client({
      connectionString: `postgres://postgres@127.0.0.1:${primaryPort}/postgres`,
    });
    await primary.connect();
    try {
      await primary.query(`ALTER SYSTEM SET synchronous_standby_names = '*'`);
      await primary.query(`SELECT pg_reload_conf()`);
      for (let i = 0; ; i++) {
        const { rows } = await primary.query<{ sync_state: string }>(
          `SELECT sync_state FROM pg_stat_replication WHERE state = 'streaming'`,
        );
        if (rows.some((row) => row.sync_state === 'sync')) break;
        if (i > 300) throw new Error('the standby never became synchronous');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      await primary.end();
    }
  } catch (error) {
    stop(standbyData);
    stop(primaryData);
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const read = (file: string) => {
    try {
      return readFileSync(file, 'utf8');
    } catch {
      return '';
    }
  };
  return {
    primaryPort,
    standbyPort,
    logs: () => ({ primary: read(`${primaryData}.log`), standby: read(`${standbyData}.log`) }),
    // Without blocking the event loop: the instances under test share this process.
    crashPrimary: () => pgCtl(bin, ['-D', primaryData, '-m', 'immediate', '-w', 'stop']),
    promoteStandby: () => pgCtl(bin, ['-D', standbyData, '-w', 'promote']),
    destroy() {
      stop(standbyData);
      stop(primaryData);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function pgCtl(bin: string, args: string[]): Promise<void> {
  const asRoot = process.getuid?.() === 0;
  const pgCtlPath = join(bin, 'pg_ctl');
  await promisify(execFile)(
    asRoot ? 'runuser' : pgCtlPath,
    asRoot ? ['-u', 'postgres', '--', pgCtlPath, ...args] : args,
    { timeout: 60_000 },
  );
}
