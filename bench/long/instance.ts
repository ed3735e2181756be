/** The driver's handle on one instance process (instance-main.ts): IPC calls, kill, stop. */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
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
  private nextId = 0;
  private readonly waiting = new Map<
    number,
    { resolve: (v: any) => void; reject: (e: Error) => void }
  >();
  private readonly output: string[] = [];
  private readonly exit: Promise<number | null>;
  exited = false;

  private constructor(private readonly child: ChildProcess) {
    const keep = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) if (line.trim()) this.output.push(line);
      if (this.output.length > 30) this.output.splice(0, this.output.length - 30);
      if (process.env.BENCH_VERBOSE) process.stderr.write(chunk);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.on('message', (m: { id: number; ok: boolean; result?: unknown; error?: string }) => {
      const waiter = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if (m.ok) waiter?.resolve(m.result);
      else waiter?.reject(new Error(m.error));
    });
    this.exit = new Promise((resolve) =>
      child.once('exit', (code) => {
        this.exited = true;
        for (const w of this.waiting.values())
          w.reject(new Error(`instance exited (${code}):\n${this.tail()}`));
        this.waiting.clear();
        resolve(code);
      }),
    );
  }

  static async launch(kind: SystemKind, settings: LongSystemSettings): Promise<Instance> {
    const child = fork(ENTRY, [], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    const instance = new Instance(child);
    await instance.call('start', { kind, settings });
    return instance;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  call<T>(command: string, args: object = {}): Promise<T> {
    if (this.exited) return Promise.reject(new Error(`instance has exited:\n${this.tail()}`));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.child.send({ id, command, ...args });
    });
  }

  usage(): Promise<InstanceUsage> {
    return this.call('usage');
  }

  /** SIGKILL, as a crashed or OOM-killed worker goes: no shutdown hook runs. */
  async kill(): Promise<void> {
    this.child.kill('SIGKILL');
    await this.exit;
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    const killer = setTimeout(() => this.child.kill('SIGKILL'), 20_000);
    try {
      await this.call('stop');
    } catch {
      // the kill above ends it
    }
    if (this.child.connected) this.child.disconnect();
    await this.exit;
    clearTimeout(killer);
  }

  tail(): string {
    return this.output.slice(-15).join('\n');
  }
}
