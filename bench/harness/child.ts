/**
 * The parent's handle on a system under test running in its own Node process
 * (bench/systems/sut-main.ts): commands go over IPC, the child's output is
 * kept (last lines) to explain a failure.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TaskPlan } from './plan.js';
import type { BenchSchedule, SystemName, SystemSettings } from '../systems/system.js';
import type { ScheduleMode, StatementTime, Usage } from '../systems/sut-main.js';
import type { BareMode } from '../systems/bare.js';
import { ChildRpc } from './child-rpc.js';
import { REDIS_URL } from './db.js';

const ENTRY = fileURLToPath(new URL('../systems/sut-main.js', import.meta.url));
const POOL_SIZE = 10;
const CONCURRENCY = 10;

export interface Started {
  ms: number;
  startedAtMs: number;
  readyAtMs: number;
}

export interface Scheduled {
  ms: number;
  endedAtMs: number;
}

export class SystemProcess {
  private readonly rpc: ChildRpc;

  private constructor(
    child: ChildProcess,
    readonly spawnedAtMs: number,
  ) {
    this.rpc = new ChildRpc(child, 'system process', 40);
  }

  /** Forks the child; the system is loaded by `start`. */
  static spawn(): SystemProcess {
    // BENCH_CPU_PROF=<dir>: each system process writes a .cpuprofile there (open it in Chrome DevTools).
    const profile = process.env.BENCH_CPU_PROF;
    const child = fork(ENTRY, [], {
      execArgv: ['--expose-gc', ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [])],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    return new SystemProcess(child, Date.now());
  }

  /** Spawns a child and starts `system` in it against `databaseUrl`. */
  static async launch(
    system: SystemName,
    databaseUrl: string,
    extra: Partial<SystemSettings> = {},
  ): Promise<{ sut: SystemProcess; started: Started }> {
    const sut = SystemProcess.spawn();
    try {
      const started = await sut.start(system, databaseUrl, extra);
      return { sut, started };
    } catch (error) {
      await sut.stop();
      throw error;
    }
  }

  start(
    system: SystemName,
    databaseUrl: string,
    extra: Partial<SystemSettings> = {},
  ): Promise<Started> {
    const settings: SystemSettings = {
      databaseUrl,
      redisUrl: REDIS_URL,
      poolSize: POOL_SIZE,
      concurrency: CONCURRENCY,
      namespace: `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`,
      ...extra,
    };
    return this.call('start', { system, settings });
  }

  schedule(plan: TaskPlan, mode: ScheduleMode): Promise<Scheduled> {
    return this.call('schedule', { plan, mode, inFlight: 50, chunk: 1000 });
  }

  /** Adds recurring schedules at run time, one call each (this project only). */
  upsertSchedules(schedules: BenchSchedule[]): Promise<{ ms: number }> {
    return this.call('schedules', { schedules });
  }

  usage(): Promise<Usage> {
    return this.call('usage', {});
  }

  /** Time per statement kind since the last call, most first. */
  statementTimes(): Promise<StatementTime[]> {
    return this.call('statementTimes', {});
  }

  /** Usage after full garbage collections and a low-memory one (which shrinks the young generation). */
  settledUsage(): Promise<Usage & { rssAfterFullGc: number }> {
    return this.call('gc', {});
  }

  bare(url: string, mode: BareMode, count: number): Promise<{ ms: number }> {
    return this.call('bare', { url, mode, count, loops: POOL_SIZE });
  }

  /** Stops the system gracefully, then the process; kills it if it hangs. */
  stop(): Promise<void> {
    return this.rpc.stop({ command: 'stop', args: {} });
  }

  tail(): string {
    return this.rpc.tail();
  }

  private call<T>(command: string, args: unknown): Promise<T> {
    return this.rpc.request({ command, args });
  }
}
