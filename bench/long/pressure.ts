/**
 * What each phase does to the server while the load runs, after the public
 * harness's phase types (docs/method.md there). Each returns its stop.
 */
import type pg from 'pg';
import type { Cluster } from './cluster.js';
import type { PhaseKind } from './phase-kinds.js';
import { connect } from './pg-client.js';
import { sleep } from './long-system.js';

export interface PressureContext {
  cluster: Cluster;
  url: string;
  database: string;
  /** The system's busiest table, for the repeatable-read readers. */
  hotTable: string;
  phaseMs: number;
  /** Kills the last instance; `relaunch` brings it back. */
  killInstance(): Promise<void>;
  relaunchInstance(): Promise<void>;
  note(event: string): void;
}

type Stop = () => Promise<void>;

const READERS = 4;
const IDLE_CONNECTIONS = 300;
const BACKEND_KILLS_PER_SECOND = 2;

/** One BEGIN with an XID held for the whole phase: vacuum can reclaim nothing newer. */
async function idleInTransaction(c: PressureContext): Promise<Stop> {
  const client = await connect(c.url, 'long-bench-idle-in-tx');
  await client.query('BEGIN');
  await client.query('SELECT txid_current()');
  return async () => {
    await client.query('ROLLBACK').catch(() => {});
    await client.end().catch(() => {});
  };
}

/** Four REPEATABLE READ transactions scanning the hot table, each renewed every 10 s, staggered. */
async function activeReaders(c: PressureContext): Promise<Stop> {
  let running = true;
  const reader = async (index: number) => {
    await sleep(index * 2500);
    let client: pg.Client | undefined;
    while (running) {
      try {
        client ??= await connect(c.url, `long-bench-reader-${index}`);
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
        const until = Date.now() + 10_000;
        while (running && Date.now() < until) {
          await client.query(`SELECT count(*) FROM ${c.hotTable}`);
          await sleep(1000);
        }
        await client.query('COMMIT');
      } catch {
        await client?.end().catch(() => {});
        client = undefined;
        await sleep(500);
      }
    }
    await client?.end().catch(() => {});
  };
  const readers = Array.from({ length: READERS }, (_, i) => reader(i));
  return async () => {
    running = false;
    await Promise.all(readers);
  };
}

/** One kill-and-relaunch cycle every this long at most: "one of three instances killed every few minutes". */
const KILL_CYCLE_MS = 120_000;

/**
 * SIGKILL the last instance, relaunch it half a cycle later; a cycle every
 * KILL_CYCLE_MS or so (one in a phase shorter than two cycles). A boot
 * slower than half a cycle delays the next kill, never overlaps it.
 */
async function killWorker(c: PressureContext): Promise<Stop> {
  const cycles = Math.max(1, Math.floor(c.phaseMs / KILL_CYCLE_MS));
  const cycleMs = c.phaseMs / cycles;
  const startedAt = Date.now();
  let stopping = false;
  let wake: (() => void) | undefined;
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      if (stopping) return resolve();
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const cycle = async (n: number) => {
    await c.killInstance();
    c.note(`instance killed (${n + 1}/${cycles})`);
    await pause(Math.max(0, startedAt + n * cycleMs + cycleMs / 2 - Date.now()));
    await c.relaunchInstance().then(
      () => c.note('instance relaunched'),
      (e: Error) => c.note(`relaunch failed: ${e.message}`),
    );
  };
  const run = (async () => {
    for (let n = 0; n < cycles && !stopping; n++) {
      if (n > 0) await pause(Math.max(0, startedAt + n * cycleMs - Date.now()));
      if (!stopping) await cycle(n);
    }
  })();
  return async () => {
    // The phase is over: a relaunch still waiting happens now, no new kill starts.
    stopping = true;
    wake?.();
    await run;
  };
}

/** Two restarts (fast shutdown, down a few seconds), at the start and halfway. */
async function postgresRestart(c: PressureContext): Promise<Stop> {
  const downMs = Math.min(5000, c.phaseMs / 8);
  const restart = async () => {
    c.cluster.stop();
    c.note('postgres stopped');
    await sleep(downMs);
    c.cluster.start();
    c.note('postgres started');
  };
  await restart();
  const second = sleep(c.phaseMs / 2 - downMs).then(restart);
  return () => second;
}

/** pg_terminate_backend on a random connection of the system's, a few times a second. */
async function backendKill(c: PressureContext): Promise<Stop> {
  const client = await connect(c.url, 'long-bench-backend-killer');
  let killed = 0;
  const timer = setInterval(() => {
    client
      .query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'
           AND application_name NOT LIKE 'long-bench%'
         ORDER BY random() LIMIT 1`,
        [c.database],
      )
      .then(
        (r) => (killed += r.rowCount ?? 0),
        () => {},
      );
  }, 1000 / BACKEND_KILLS_PER_SECOND);
  return async () => {
    clearInterval(timer);
    c.note(`${killed} backends terminated`);
    await client.end().catch(() => {});
  };
}

/** 300 idle connections on the system's database, held for the phase. */
async function poolExhaustion(c: PressureContext): Promise<Stop> {
  const clients: pg.Client[] = [];
  for (let i = 0; i < IDLE_CONNECTIONS; i += 25) {
    const batch = await Promise.allSettled(
      Array.from({ length: 25 }, () => connect(c.url, 'long-bench-idle')),
    );
    for (const r of batch) if (r.status === 'fulfilled') clients.push(r.value);
  }
  c.note(`${clients.length} idle connections held`);
  return async () => {
    await Promise.all(clients.map((client) => client.end().catch(() => {})));
  };
}

const none = async (): Promise<Stop> => async () => {};

export const PRESSURES: Record<PhaseKind, (c: PressureContext) => Promise<Stop>> = {
  clean: none,
  'idle-in-tx': idleInTransaction,
  'active-readers': activeReaders,
  'high-load': none,
  'kill-worker': killWorker,
  'postgres-restart': postgresRestart,
  'pg-backend-kill': backendKill,
  'pool-exhaustion': poolExhaustion,
  recovery: none,
};
