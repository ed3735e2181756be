/**
 * What each system under test implements. One runs per child process
 * (sut-main.ts), so the CPU, RSS and statements measured are its own.
 */
import type { Task } from '../harness/plan.js';

export type SystemName =
  | 'project'
  | 'bullmq'
  | 'bullmq-pg'
  | 'pg-boss'
  | 'graphile-worker'
  | 'cron-scan'
  | 'timeout-floor'
  | 'nest-floor';

export interface SystemSettings {
  databaseUrl: string;
  redisUrl: string;
  /** Connections in the system's Postgres pool (10 for every system). */
  poolSize: number;
  /** Tasks run at once (10 for every system). */
  concurrency: number;
  /** This project's wheel tick (DelayModule option tickMs). */
  tickMs?: number;
  /** This project only: tasks held in the wheel beside the measured ones, due 20–50 min ahead. */
  ballast?: number;
  /** This project's retention (DelayModule option retention; durations as strings, false = keep). */
  retention?: { finished?: string | false; dead?: string | false; interval?: string };
  /**
   * This project with the app's observability on, as the app ships: the
   * delay events bridge as DelayModule's observer, EventEmitter2, and the
   * Prometheus task metrics listening to the events. Off: no observer at all.
   */
  observe?: boolean;
  /**
   * This project's OpenTelemetry tracing: `'on'`, an SDK registered (always
   * on, exported to memory, bench-tracing.ts) and tasks scheduled inside a
   * span; `'disabled'`, DelayModule's `tracing: false` (the API is never
   * loaded). Unset: the API loaded and no SDK registered, as an app with
   * tracing off runs.
   */
  tracing?: 'on' | 'disabled';
  /** Namespaces Redis keys and queue names so runs never see each other. */
  namespace: string;
}

export interface SystemUnderTest {
  /** Connects, creates its schema if it has one, and starts its workers. */
  start(): Promise<void>;
  /** Schedules one task through the system's single-task API. */
  scheduleOne(task: Task): Promise<void>;
  /** Schedules many tasks through the system's bulk API. */
  scheduleMany(tasks: Task[]): Promise<void>;
  /**
   * This project only: the same rows written by bare INSERTs on the same
   * pool, with none of the library's work around them (the schedule
   * workload's floor for its single and bulk APIs).
   */
  bareScheduleOne?(task: Task): Promise<void>;
  bareScheduleMany?(tasks: Task[]): Promise<void>;
  /**
   * This project only (the `recurring` workload): adds schedules at run time,
   * one call each, in order. Each occurrence's handler writes one
   * bench_occurrence row (the table must exist before the first falls due).
   */
  upsertSchedules?(schedules: BenchSchedule[]): Promise<void>;
  stop(): Promise<void>;
}

/** A recurring schedule of the `recurring` workload: `every` (ms) or a `cron` with seconds. */
export interface BenchSchedule {
  name: string;
  every?: number;
  cron?: string;
}

export type SystemFactory = (settings: SystemSettings) => SystemUnderTest;

/** BullMQ on Redis and on its PostgreSQL backend side by side wherever BullMQ runs. */
export const PEERS: SystemName[] = [
  'bullmq',
  'bullmq-pg',
  'pg-boss',
  'graphile-worker',
  'cron-scan',
];

/** How each system is named in the tables. */
export function label(system: SystemName, tickMs?: number, observe?: boolean): string {
  if (system === 'project')
    return `this project (${tickMs === undefined || tickMs >= 1000 ? `${(tickMs ?? 1000) / 1000} s` : `${tickMs} ms`} tick${observe ? ', metrics + events on' : ''})`;
  if (system === 'timeout-floor') return 'floor: a bare setTimeout per task';
  if (system === 'nest-floor') return 'floor: Nest + TypeORM, no DelayModule';
  return system;
}
