/**
 * One system through every phase: its instances started on a fresh database,
 * the pending tasks loaded, the fixed load offered, each phase's pressure
 * applied and measured, then a drain and the ledger check.
 */
import type { Cluster } from './cluster.js';
import { Instance } from './instance.js';
import { Load } from './load.js';
import {
  CREATE_LEDGER,
  EFFECTED_OFFERED,
  INDEX_STARTED_AT,
  LEDGER_CHECK,
  PENDING_FIRED,
  PHASE_FIGURES,
} from './ledger-statements.js';
import { sleep } from './long-system.js';
import type { LongOptions, SystemKind } from './options.js';
import { lengthFactor, loadFactor, type PhaseKind } from './phase-kinds.js';
import type { PhaseRecord } from './phase-record.js';
import { once } from './pg-client.js';
import { PRESSURES } from './pressure.js';
import { setRecoveries } from './recovery.js';
import { rssGrowth, type RssGrowth } from './rss-growth.js';
import {
  DEPTH,
  HOT_TABLE,
  INDEXES,
  STATEMENTS,
  TABLES,
  TOP_STATEMENTS,
  XACTS_ONLY,
} from './sample-statements.js';
import { fillFromLedger, Sampler, type LatenessWindow, type Sample } from './series.js';

export interface LedgerCheck {
  offered: number;
  uncertain: number;
  missing: number;
  duplicates: number;
  early: number;
  unknown: number;
  pendingFired: number;
  drainSeconds: number;
  ok: boolean;
}

export interface SystemRecord {
  system: SystemKind;
  /** When the load started (epoch ms): the series' t = 0. */
  startMs: number;
  loadSeconds: number;
  /** Most-run statements over the whole run (pending load included), calls per offered task. */
  topStatements: { perTask: number; rows: number; ms: number; query: string }[];
  phases: PhaseRecord[];
  ledger: LedgerCheck;
  /** One sample every --sample-seconds from the start of the load to the end of the drain. */
  series: Sample[];
  lateness: LatenessWindow[];
  rssGrowth: RssGrowth[];
}

type Progress = (line: string) => void;

/** Nest's coloured log lines, as an instance's last output reads. */
const ANSI_COLOUR = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');

export async function runSystem(
  kind: SystemKind,
  cluster: Cluster,
  o: LongOptions,
  progress: Progress,
): Promise<SystemRecord> {
  const database = `long_${kind.replace('-', '_')}`;
  await once(cluster.url, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await once(cluster.url, `CREATE DATABASE ${database}`);
  const url = cluster.urlOf(database);
  await once(url, CREATE_LEDGER);
  const statementsSql = cluster.statements ? STATEMENTS : XACTS_ONLY;

  const settings = (instance: number) => ({ url, instance, workers: o.workers, rate: o.rate });
  // The first runs the migrations alone; the others find the schema there.
  const instances: Instance[] = [await Instance.launch(kind, settings(0))];
  for (let i = 1; i < o.instances; i++) instances.push(await Instance.launch(kind, settings(i)));
  const cpuBefore = new Map<Instance, number>();

  const plannedMs = o.phases.reduce(
    (ms, kind) => ms + lengthFactor(kind) * o.phaseSeconds * 1000,
    0,
  );
  const loadStarted = Date.now();
  progress(`${kind}: loading ${o.pending.toLocaleString('en-US')} pending tasks`);
  await instances[0].call('load', {
    count: o.pending,
    // Due after the run and its drain, so every one of them firing would be early.
    fromMs: Date.now() + 2 * plannedMs + 30 * 60_000,
    spanMs: 3 * 3_600_000,
  });
  const loadSeconds = (Date.now() - loadStarted) / 1000;
  progress(`${kind}: loaded in ${loadSeconds.toFixed(1)} s; offering ${o.rate}/s`);
  const load = new Load(o.nowShare, o.aheadSeconds * 1000);
  const sampler = new Sampler({
    kind,
    offered: async () => (await load.totals()).offered,
    url,
    clusterUrl: cluster.url,
    database,
    statementsSql,
    statements: cluster.statements,
    sampleMs: o.sampleSeconds * 1000,
    instances: () => instances,
    progress,
  });

  const usages = () =>
    Promise.all(
      instances.map(async (inst) => {
        const u = inst.exited ? null : await inst.usage().catch(() => null);
        return { inst, u };
      }),
    );
  const phases: PhaseRecord[] = [];
  try {
    for (const instance of instances) await load.join(instance, o.rate * loadFactor(o.phases[0]));
    // Half the offered tasks fall due over the next aheadSeconds: until then effects/s climb
    // towards offered, so the first phase starts once the flow is steady.
    progress(`${kind}: warming up for ${o.aheadSeconds} s`);
    await sleep(o.aheadSeconds * 1000);
    for (const kindOfPhase of o.phases) phases.push(await runPhase(kindOfPhase));
    const ledger = await drainAndCheck();
    const lateness = await fillFromLedger(url, sampler, o.pending + 1);
    setRecoveries(phases, sampler.samples, o.rate);
    const top = cluster.statements
      ? await once<{ calls: number; rows: number; ms: number; query: string }>(
          cluster.url,
          TOP_STATEMENTS,
          [database],
        )
      : [];
    const topStatements = top.map((t) => ({
      perTask: round(t.calls / Math.max(1, ledger.offered), 3),
      rows: t.rows,
      ms: t.ms,
      query: t.query,
    }));
    return {
      system: kind,
      startMs: sampler.startMs,
      loadSeconds: round(loadSeconds, 1),
      topStatements,
      phases,
      ledger,
      series: sampler.samples,
      lateness,
      rssGrowth: rssGrowth(phases, sampler.samples),
    };
  } finally {
    await sampler.stop();
    await Promise.all(instances.map((i) => i.stop()));
    await once(cluster.url, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => {});
  }

  async function runPhase(phase: PhaseKind): Promise<PhaseRecord> {
    const events: string[] = [];
    // One line each, without colours: events go into a Markdown table cell.
    const note = (e: string) =>
      events.push(
        `${((Date.now() - fromMs) / 1000).toFixed(1)} s: ${e
          .replace(ANSI_COLOUR, '')
          .split('\n')[0]
          .slice(0, 160)}`,
      );
    await load.setRate(o.rate * loadFactor(phase));
    const fromMs = Date.now();
    sampler.phase = phase;
    const before = await usages();
    for (const { inst, u } of before) cpuBefore.set(inst, u ? u.cpuMs : 0);
    const offeredBefore = (await load.totals()).offered;
    const serverCpuBefore = cluster.cpuMs();
    const statsBefore = (
      await once<{ statements: number; xacts: number }>(cluster.url, statementsSql, [database])
    )[0];
    const phaseMs = lengthFactor(phase) * o.phaseSeconds * 1000;
    let completed = true;
    const stop = await PRESSURES[phase]({
      cluster,
      url,
      database,
      hotTable: HOT_TABLE[kind],
      phaseMs,
      note,
      killInstance: async () => {
        const last = instances[instances.length - 1];
        await load.retire(last);
        await last.kill();
      },
      relaunchInstance: async () => {
        const last = instances.length - 1;
        instances[last] = await Instance.launch(kind, settings(last));
        cpuBefore.set(instances[last], 0);
        await load.join(instances[last]);
      },
    }).catch((error: Error) => {
      completed = false;
      note(`pressure failed to start: ${error.message}`);
      return async () => {};
    });
    await sleep(phaseMs - (Date.now() - fromMs));
    await stop().catch((error: Error) => {
      completed = false;
      note(`pressure failed to stop: ${error.message}`);
    });
    // An instance that died by itself (not the one kill-worker killed) is noted and relaunched.
    for (let i = 0; i < instances.length; i++)
      if (instances[i].exited && phase !== 'kill-worker') {
        note(`instance ${i} had exited, relaunched: ${instances[i].tail().split('\n').pop()}`);
        await load.retire(instances[i]).catch(() => {});
        instances[i] = await Instance.launch(kind, settings(i));
        cpuBefore.set(instances[i], 0);
        await load.join(instances[i]);
      }
    const toMs = Date.now();
    const serverCpuAfter = cluster.cpuMs();
    const after = await usages();
    const statsAfter = (
      await once<{ statements: number; xacts: number }>(cluster.url, statementsSql, [database])
    )[0];
    const seconds = (toMs - fromMs) / 1000;
    const offered = (await load.totals()).offered - offeredBefore;
    const tables = await once<{ name: string; dead: number; bytes: number }>(url, TABLES);
    const indexes = await once<{ name: string; bytes: number }>(url, INDEXES);
    const [depthEnd] = await once<{ n: number }>(url, DEPTH[kind]);
    const [fig] = await once<{ effects: number }>(
      url,
      `SELECT count(*)::int AS effects FROM bench_ledger
      WHERE started_at >= to_timestamp($1::float8 / 1000) AND started_at < to_timestamp($2::float8 / 1000)`,
      [fromMs, toMs],
    );
    const effects = fig.effects;
    const sampled = sampler.samples.filter((s) => s.atMs >= fromMs && s.atMs <= toMs);
    const depthMax = Math.max(0, ...sampled.map((s) => s.depth ?? 0));
    const deadMax = Math.max(
      0,
      ...sampled.map((s) => Object.values(s.deadTuples ?? {}).reduce((a, n) => a + n, 0)),
    );
    const processes = after.map(({ inst, u }, i) => {
      const cpuMs = u ? u.cpuMs - (cpuBefore.get(inst) ?? 0) : 0;
      return {
        instance: i,
        pid: u ? (inst.pid ?? null) : null,
        rssMb: u ? Math.round(u.rss / 1e5) / 10 : 0,
        cpuMs: Math.round(cpuMs),
        cpuMsPerEffect: effects ? round(cpuMs / effects, 3) : 0,
      };
    });
    const cpuTotal = processes.reduce((s, p) => s + p.cpuMs, 0);
    const deadEnd = tables.reduce((s, t) => s + t.dead, 0);
    const record: PhaseRecord = {
      kind: phase,
      fromMs,
      toMs,
      offeredPerSecond: round(offered / seconds, 1),
      effectsPerSecond: round(effects / seconds, 1),
      lateness: null,
      early: 0,
      depth: { max: Math.max(depthMax, depthEnd.n), end: depthEnd.n },
      deadTuples: {
        max: Math.max(deadMax, deadEnd),
        end: deadEnd,
        endByTable: Object.fromEntries(tables.map((t) => [t.name, t.dead])),
      },
      bytes: Object.fromEntries([...tables, ...indexes].map((r) => [r.name, r.bytes])),
      statementsPerSecond: cluster.statements
        ? round((statsAfter.statements - statsBefore.statements) / seconds, 1)
        : null,
      transactionsPerSecond: round((statsAfter.xacts - statsBefore.xacts) / seconds, 1),
      processes,
      cpuMsPerEffect: effects ? round(cpuTotal / effects, 3) : 0,
      // Across a restart the postmaster is another process: no figure then.
      postgresCpuMsPerEffect:
        effects &&
        serverCpuBefore !== null &&
        serverCpuAfter !== null &&
        serverCpuAfter >= serverCpuBefore
          ? round((serverCpuAfter - serverCpuBefore) / effects, 3)
          : null,
      events,
      completed,
      recovery: null,
    };
    progress(
      `${kind} ${phase} done: offered ${record.offeredPerSecond}/s, effects ${record.effectsPerSecond}/s, ${events.join('; ')}`,
    );
    return record;
  }

  async function drainAndCheck(): Promise<LedgerCheck> {
    // Stop offering, then wait for every offered task to have its effect (the last are due aheadSeconds on).
    for (const instance of instances) await load.retire(instance);
    sampler.phase = 'drain';
    const drainStarted = Date.now();
    const final = await load.totals();
    const offeredCount = final.ranges.reduce((s, r) => s + r.last - r.first + 1, 0);
    const expected = offeredCount - final.uncertain.length;
    const drainLimitMs = Math.max(180_000, (o.aheadSeconds + 180) * 1000);
    for (;;) {
      const [done] = await once<{ n: number }>(url, EFFECTED_OFFERED, [o.pending]).catch(() => [
        { n: 0 },
      ]);
      if (
        (done.n >= expected && Date.now() > final.maxDueMs + 2000) ||
        Date.now() - drainStarted > drainLimitMs
      )
        break;
      progress(`${kind} drain: ${done.n}/${expected} offered tasks effected`);
      await sleep(2000);
    }
    const drainSeconds = (Date.now() - drainStarted) / 1000;
    await sampler.stop();
    await once(url, INDEX_STARTED_AT);

    const figures = await once<{
      name: string;
      early: number;
      q: number[] | null;
      max: number | null;
      q_now: number[] | null;
      q_ahead: number[] | null;
    }>(url, PHASE_FIGURES, [
      phases.map((_, i) => String(i)),
      phases.map((p) => p.fromMs),
      phases.map((p) => p.toMs),
      o.nowShare,
      o.aheadSeconds * 1000,
    ]);
    const split = (q: number[] | null) => q && { p50: round(q[0], 1), p99: round(q[1], 1) };
    for (const f of figures) {
      const p = phases[Number(f.name)];
      p.early = f.early;
      p.lateness = f.q
        ? {
            p50: round(f.q[0], 1),
            p99: round(f.q[1], 1),
            p9999: round(f.q[2], 1),
            max: round(Number(f.max), 1),
          }
        : null;
      p.latenessByDue = { now: split(f.q_now), ahead: split(f.q_ahead) };
    }
    const [check] = await once<{
      duplicates: number;
      early: number;
      unknown: number;
      missing: number;
    }>(url, LEDGER_CHECK, [
      final.ranges.map((r) => r.first),
      final.ranges.map((r) => r.last),
      final.uncertain,
      o.pending,
    ]);
    const [pendingFired] = await once<{ n: number }>(url, PENDING_FIRED, [o.pending]);
    const ledger: LedgerCheck = {
      offered: offeredCount,
      uncertain: final.uncertain.length,
      ...check,
      pendingFired: pendingFired.n,
      drainSeconds: round(drainSeconds, 1),
      ok:
        check.missing === 0 &&
        check.duplicates === 0 &&
        check.early === 0 &&
        check.unknown === 0 &&
        pendingFired.n === 0,
    };
    return ledger;
  }
}

export function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
