/** What one phase of one system measured (JSON as written in bench/results/long-*.json). */
import type { PhaseKind } from './phase-kinds.js';
import type { Recovery } from './recovery.js';

export interface LatenessSplit {
  p50: number;
  p99: number;
}

export interface PhaseRecord {
  kind: PhaseKind;
  fromMs: number;
  toMs: number;
  offeredPerSecond: number;
  effectsPerSecond: number;
  /** Effect start − due time, ms, effects started in this phase (early ones counted apart). */
  lateness: { p50: number; p99: number; p9999: number; max: number } | null;
  /**
   * The same, p50 and p99, of tasks due at once (`now`: scheduled, learnt of
   * and claimed) and of tasks due a second or more after they were
   * scheduled (`ahead`: fired from a wheel). Absent in runs before it.
   */
  latenessByDue?: { now: LatenessSplit | null; ahead: LatenessSplit | null };
  early: number;
  depth: { max: number; end: number };
  /** Dead tuples summed over the system's tables: the most sampled and at the end. */
  deadTuples: { max: number; end: number; endByTable: Record<string, number> };
  /** Bytes at the end of the phase, tables and indexes. */
  bytes: Record<string, number>;
  statementsPerSecond: number | null;
  transactionsPerSecond: number;
  /** Per instance: RSS at the end, CPU in the phase, CPU per effect of the phase (all instances' effects). */
  processes: {
    instance: number;
    /** Null for an instance down at the phase's end. */
    pid: number | null;
    rssMb: number;
    cpuMs: number;
    cpuMsPerEffect: number;
  }[];
  cpuMsPerEffect: number;
  /** The server's CPU in the phase, per effect (all its processes; null where /proc cannot tell). */
  postgresCpuMsPerEffect: number | null;
  events: string[];
  completed: boolean;
  /** Set once the run is over, from the series (recovery.ts). */
  recovery: Recovery | null;
}
