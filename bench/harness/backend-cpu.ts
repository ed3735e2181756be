/**
 * CPU of a bench database's backends, read from /proc (Postgres on this
 * host): what the server spent on a system's statements, which on a shared
 * machine competes with the system's own process.
 */
import { readFile } from 'node:fs/promises';
import pg from 'pg';
import { SERVER_URL, withClient } from './db.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const TICKS_PER_SECOND = 100; // getconf CLK_TCK on Linux

async function cpuTicksOf(pid: number): Promise<number | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After the command: state is field 3, utime 14 and stime 15 (1-based, whole line).
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return null;
  }
}

/**
 * CPU of the bench database's backends, from /proc (Postgres on this host):
 * each backend's CPU since the start (or since it connected), sampled every
 * 500 ms so one that exits keeps what it used until its last sample.
 */
export class BackendCpu {
  private readonly base = new Map<number, number>();
  private readonly last = new Map<number, number>();
  private stopped = false;
  private loop: Promise<void> | undefined;
  private client: pg.Client | undefined;

  constructor(
    private readonly database: string,
    private readonly exclude: number[],
  ) {}

  /** Postgres runs here: this connection's backend is a local process. */
  static async available(): Promise<boolean> {
    return withClient(SERVER_URL, async (c) => {
      const pid = (await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
      return (await cpuTicksOf(pid)) !== null;
    });
  }

  async start(): Promise<void> {
    this.client = new pg.Client({ connectionString: SERVER_URL });
    await this.client.connect();
    await this.sample(true);
    this.loop = (async () => {
      while (!this.stopped) {
        await sleep(500);
        if (!this.stopped) await this.sample(false);
      }
    })();
  }

  /** CPU ms of the database's backends since start. */
  async stop(): Promise<number> {
    this.stopped = true;
    await this.loop;
    await this.sample(false);
    await this.client!.end();
    let ticks = 0;
    for (const [pid, last] of this.last) ticks += last - (this.base.get(pid) ?? 0);
    return (ticks * 1000) / TICKS_PER_SECOND;
  }

  private async sample(initial: boolean): Promise<void> {
    const { rows } = await this.client!.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE datname = $1`,
      [this.database],
    );
    for (const { pid } of rows) {
      if (this.exclude.includes(pid)) continue;
      const ticks = await cpuTicksOf(pid);
      if (ticks === null) continue;
      if (!this.base.has(pid)) this.base.set(pid, initial ? ticks : 0);
      this.last.set(pid, ticks);
    }
  }
}
