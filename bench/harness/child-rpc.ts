/**
 * The parent's side of a bench child process: requests over IPC (each with
 * an id, answered `{ id, ok, result | error }`), the child's last output
 * lines for error messages, a graceful stop that kills a child that hangs,
 * and a kill. The bench's system processes, the limits bench's instances and
 * the long-horizon bench's instances all talk to their children this way.
 */
import type { ChildProcess } from 'node:child_process';

export class ChildRpc {
  private nextId = 0;
  private readonly waiting = new Map<
    number,
    { resolve: (value: any) => void; reject: (error: Error) => void }
  >();
  private readonly output: string[] = [];
  private readonly exit: Promise<number | null>;
  exited = false;

  /** `name` says whose process it is in errors ("system process", "instance"). */
  constructor(
    private readonly child: ChildProcess,
    private readonly name: string,
    keepLines = 30,
  ) {
    const keep = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) if (line.trim()) this.output.push(line);
      if (this.output.length > keepLines) this.output.splice(0, this.output.length - keepLines);
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
        for (const waiter of this.waiting.values())
          waiter.reject(new Error(`${name} exited (${code}):\n${this.tail()}`));
        this.waiting.clear();
        resolve(code);
      }),
    );
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Sends `message` with an id of its own; resolves with the child's answer. */
  request<T>(message: object): Promise<T> {
    if (this.exited) return Promise.reject(new Error(`${this.name} has exited:\n${this.tail()}`));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.child.send({ id, ...message });
    });
  }

  /** Asks the child to stop with `message`, then ends the process; kills it if it hangs that long. */
  async stop(message: object, killAfterMs = 20_000): Promise<void> {
    if (this.exited) return;
    const killer = setTimeout(() => this.child.kill('SIGKILL'), killAfterMs);
    try {
      await this.request(message);
    } catch {
      // a failed stop still ends in the kill above
    }
    if (this.child.connected) this.child.disconnect();
    await this.exit;
    clearTimeout(killer);
  }

  /** SIGKILL, as a crashed or OOM-killed process goes: no shutdown hook runs. */
  async kill(): Promise<void> {
    this.child.kill('SIGKILL');
    await this.exit;
  }

  tail(): string {
    return this.output.slice(-15).join('\n');
  }
}
