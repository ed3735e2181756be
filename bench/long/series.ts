/**
 * The run as a time series: one sample every --sample-seconds from the start
 * of the offered load to the end of the drain, on a fixed grid (a slow sample
 * skips ticks, it never shifts the later ones). What Postgres could not answer
 * (it is restarting) is null in that sample. Effects/s come from the ledger
 * once the run is over (`fillFromLedger`): the systems never pay for them.
 */
import type { Instance } from './instance.js';
import { EFFECTS_IN, LATENESS_WINDOWS } from './ledger-statements.js';
import type { SystemKind } from './options.js';
import type { PhaseKind } from './phase-kinds.js';
import { once } from './pg-client.js';
import { DEPTH, INDEXES, TABLES } from './sample-statements.js';

export type SeriesPhase = PhaseKind | 'warm-up' | 'drain';

export interface ProcessSample {
  instance: number;
  /** A relaunched instance is a new process: its pid tells the two apart. */
  pid: number;
  rssMb: number;
  /** CPU time over the window, % of one core; null in a process's first sample. */
  cpuPercent: number | null;
}

export interface Sample {
  /** Seconds since the load started, at the end of this sample's window. */
  t: number;
  atMs: number;
  phase: SeriesPhase;
  offeredPerSecond: number | null;
  /** Effects started in the window since the previous sample. */
  effectsPerSecond: number | null;
  /** Tasks due and not started. */
  depth: number | null;
  deadTuples: Record<string, number> | null;
  /** Tables and indexes of the system, bytes. */
  bytes: number | null;
  statementsPerSecond: number | null;
  transactionsPerSecond: number | null;
  processes: ProcessSample[];
}

/** Effect start − due time over each 10 s of effect starts, ms (early effects count as 0). */
export interface LatenessWindow {
  t: number;
  effects: number;
  p50: number;
  p99: number;
  max: number;
}

export interface SamplerSource {
  kind: SystemKind;
  url: string;
  clusterUrl: string;
  database: string;
  /** STATEMENTS or XACTS_ONLY: counters since the server started. */
  statementsSql: string;
  /** Whether pg_stat_statements counts statements (else only transactions are counted). */
  statements: boolean;
  sampleMs: number;
  /** The instances now (kill-worker replaces the last). */
  instances(): Instance[];
  /** Tasks offered so far, over every producer. */
  offered(): Promise<number>;
  progress(line: string): void;
}

interface Counters {
  atMs: number;
  offered: number | null;
  statements: number | null;
  xacts: number | null;
  cpuMsByPid: Map<number, number>;
}

const perSecond = (now: number | null, then: number | null, seconds: number) =>
  now === null || then === null ? null : Math.round(((now - then) / seconds) * 10) / 10;

/** Postgres's answer, or null while it is down. */
const orNull = <T>(query: Promise<T>) => query.catch(() => null);

export class Sampler {
  readonly samples: Sample[] = [];
  phase: SeriesPhase = 'warm-up';
  readonly startMs = Date.now();
  private running = true;
  private wake: (() => void) | undefined;
  private readonly loop: Promise<void>;
  private previous: Counters = {
    atMs: this.startMs,
    offered: 0,
    statements: null,
    xacts: null,
    cpuMsByPid: new Map(),
  };

  constructor(private readonly source: SamplerSource) {
    this.loop = this.run();
  }

  /** Ends the series with a sample now (or with the one being taken). */
  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    const { sampleMs } = this.source;
    let tick = 1;
    // The counters' starting values, so the first window has statements/s too.
    this.previous = { ...(await this.counters()), atMs: this.startMs, offered: 0 };
    while (this.running) {
      const wait = this.startMs + tick * sampleMs - Date.now();
      if (wait > 0)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, wait);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      await this.take();
      tick = Math.max(tick + 1, Math.ceil((Date.now() - this.startMs) / sampleMs));
    }
  }

  private async counters(): Promise<Counters & { processes: Omit<ProcessSample, 'cpuPercent'>[] }> {
    const { clusterUrl, statementsSql, database } = this.source;
    const atMs = Date.now();
    const instances = this.source.instances();
    const usages = await Promise.all(
      instances.map((inst) => (inst.exited ? null : inst.usage().catch(() => null))),
    );
    const stats = await orNull(
      once<{ statements: number; xacts: number }>(clusterUrl, statementsSql, [database]),
    );
    const cpuMsByPid = new Map<number, number>();
    const processes: Omit<ProcessSample, 'cpuPercent'>[] = [];
    usages.forEach((u, instance) => {
      const pid = instances[instance].pid;
      if (!u || pid === undefined) return;
      cpuMsByPid.set(pid, u.cpuMs);
      processes.push({ instance, pid, rssMb: Math.round(u.rss / 1e5) / 10 });
    });
    return {
      atMs,
      // Every producer's, those of instances killed since included (load.ts).
      offered: await this.source.offered().catch(() => null),
      statements: stats?.[0]?.statements ?? null,
      xacts: stats?.[0]?.xacts ?? null,
      cpuMsByPid,
      processes,
    };
  }

  private async take(): Promise<void> {
    const { url, kind } = this.source;
    const phase = this.phase;
    const now = await this.counters();
    const [depth, tables, indexes] = await Promise.all([
      orNull(once<{ n: number }>(url, DEPTH[kind])),
      orNull(once<{ name: string; dead: number; bytes: number }>(url, TABLES)),
      orNull(once<{ bytes: number }>(url, INDEXES)),
    ]);
    const before = this.previous;
    const seconds = (now.atMs - before.atMs) / 1000;
    const sample: Sample = {
      t: Math.round((now.atMs - this.startMs) / 100) / 10,
      atMs: now.atMs,
      phase,
      offeredPerSecond: perSecond(now.offered, before.offered, seconds),
      effectsPerSecond: null,
      depth: depth?.[0]?.n ?? null,
      deadTuples: tables && Object.fromEntries(tables.map((r) => [r.name, r.dead])),
      bytes: tables && indexes && [...tables, ...indexes].reduce((s, r) => s + r.bytes, 0),
      statementsPerSecond: this.source.statements
        ? perSecond(now.statements, before.statements, seconds)
        : null,
      transactionsPerSecond: perSecond(now.xacts, before.xacts, seconds),
      processes: now.processes.map((p) => {
        const cpuBefore = before.cpuMsByPid.get(p.pid);
        const cpuNow = now.cpuMsByPid.get(p.pid)!;
        return {
          ...p,
          cpuPercent:
            cpuBefore === undefined
              ? null
              : Math.round(((cpuNow - cpuBefore) / seconds) * 10) / 100,
        };
      }),
    };
    this.samples.push(sample);
    // A counter Postgres could not give keeps its last value, so the next window spans the gap.
    this.previous = {
      atMs: now.atMs,
      offered: now.offered ?? before.offered,
      statements: now.statements ?? before.statements,
      xacts: now.xacts ?? before.xacts,
      cpuMsByPid: now.cpuMsByPid,
    };
    const dead = sample.deadTuples && Object.values(sample.deadTuples).reduce((s, n) => s + n, 0);
    this.source.progress(
      `${kind} ${phase} at ${sample.t.toFixed(0)} s: offered ${sample.offeredPerSecond ?? '–'}/s, ` +
        `depth ${sample.depth ?? '–'}, dead tuples ${dead ?? '–'}`,
    );
  }
}

/**
 * After the run (and the ledger's index on started_at, built then): each
 * sample's effects/s, and the offered tasks' lateness per 10 s window.
 */
export async function fillFromLedger(
  url: string,
  sampler: Sampler,
  firstOfferedId: number,
): Promise<LatenessWindow[]> {
  const samples = sampler.samples;
  const starts = samples.map((s, i) => (i === 0 ? sampler.startMs : samples[i - 1].atMs));
  const ends = samples.map((s) => s.atMs);
  const counts = await once<{ n: number }>(url, EFFECTS_IN, [starts, ends]);
  samples.forEach((s, i) => {
    s.effectsPerSecond = Math.round((counts[i].n / ((ends[i] - starts[i]) / 1000)) * 10) / 10;
  });
  const lateness = await once<LatenessWindow>(url, LATENESS_WINDOWS, [
    sampler.startMs,
    firstOfferedId,
  ]);
  return lateness.map((w) => ({
    t: w.t,
    effects: w.effects,
    p50: Math.round(w.p50 * 10) / 10,
    p99: Math.round(w.p99 * 10) / 10,
    max: Math.round(w.max * 10) / 10,
  }));
}
