/** The driver's handle on one instance process (instance-main.ts): IPC calls, kill, stop. */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ChildRpc } from '../harness/child-rpc.js';
import type { LongSystemSettings } from './long-system.js';
import type { SystemKind } from './options.js';
import type { ProducerCounts } from './producer.js';

const ENTRY = fileURLToPath(new URL('./instance-main.js', import.meta.url));

export interface InstanceUsage {
  rss: number;
  cpuMs: number;
  producer: ProducerCounts | null;
}

export class Instance {
  private readonly rpc: ChildRpc;

  private constructor(child: ChildProcess) {
    this.rpc = new ChildRpc(child, 'instance');
  }

  static async launch(kind: SystemKind, settings: LongSystemSettings): Promise<Instance> {
    // BENCH_CPU_PROF=<dir>: each instance writes a .cpuprofile there when it stops.
    const profile = process.env.BENCH_CPU_PROF;
    const child = fork(ENTRY, [], {
      execArgv: profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    const instance = new Instance(child);
    await instance.call('start', { kind, settings });
    return instance;
  }

  get pid(): number | undefined {
    return this.rpc.pid;
  }

  get exited(): boolean {
    return this.rpc.exited;
  }

  call<T>(command: string, args: object = {}): Promise<T> {
    return this.rpc.request({ command, ...args });
  }

  usage(): Promise<InstanceUsage> {
    return this.call('usage');
  }

  /** SIGKILL, as a crashed or OOM-killed worker goes: no shutdown hook runs. */
  kill(): Promise<void> {
    return this.rpc.kill();
  }

  stop(): Promise<void> {
    return this.rpc.stop({ command: 'stop' });
  }

  tail(): string {
    return this.rpc.tail();
  }
}
