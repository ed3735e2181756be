/**
 * Queue depth, polled on the adapter's own connection: the latest value is
 * what a sample reports (a sample never waits on Postgres), and in
 * depth-target mode each reading also tops the producer up.
 */
import { sleep } from '../long-system.js';
import type { AdapterQueries } from './adapter-queries.js';

export class DepthWatch {
  latest: number | undefined;
  private running = false;
  private done: Promise<void> = Promise.resolve();

  constructor(
    private readonly queries: AdapterQueries,
    private readonly everyMs: number,
    private readonly onDepth: (depth: number) => void = () => {},
  ) {}

  start(): void {
    this.running = true;
    this.done = this.loop();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }

  private async loop(): Promise<void> {
    while (this.running) {
      try {
        this.latest = await this.queries.depth();
        this.onDepth(this.latest);
        await sleep(this.everyMs);
      } catch (error) {
        // Postgres restarting or this backend terminated: keep the last reading.
        console.error(`queue depth: ${(error as Error).message}`);
        await sleep(Math.max(this.everyMs, 1000));
      }
    }
  }
}
