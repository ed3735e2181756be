/**
 * The offered load, credited on wall-clock time (the public harness's rule):
 * every tick adds rate × elapsed seconds, plus any tasks granted from outside
 * (the harness's ENQUEUE tokens, a depth-target top-up), and all whole tasks
 * owed go out in bulk calls of at most `batchMax`, so a slow call never
 * lowers what is offered. A call that fails (Postgres restarting, backend
 * killed) may still have committed: its ids are kept as uncertain, never
 * retried under a new id.
 */
import { sleep, type LongSystem, type LongTask } from './long-system.js';

export interface ProducerPacing {
  /** How often owed credit is turned into calls (ms). */
  tickMs: number;
  /** Tasks per bulk call at most. */
  batchMax: number;
}

/**
 * The id rule (Producer.task): whether a task is due later, and how far
 * ahead; the ledger's SQL reads the same rule back (PHASE_FIGURES).
 */
export const LATER_FACTOR = 7919;
export const AHEAD_FACTOR = 104729;

const DEFAULT_PACING: ProducerPacing = { tickMs: 10, batchMax: 128 };

export interface ProducerCounts {
  /** Tasks whose bulk call resolved. */
  offered: number;
  /** Ids whose bulk call failed. */
  uncertain: number[];
  lastId: number;
  /** Latest due time given to any task (epoch ms). */
  maxDueMs: number;
}

export class Producer {
  private rate = 0;
  private running = false;
  /** Once stopped, neither a rate nor a grant starts it again. */
  private stopped = false;
  private done: Promise<void> = Promise.resolve();
  private credit = 0;
  private inFlight = 0;
  private readonly counts: ProducerCounts;
  private readonly pacing: ProducerPacing;

  constructor(
    private readonly system: LongSystem,
    firstId: number,
    private readonly nowShare: number,
    private readonly aheadMs: number,
    pacing: Partial<ProducerPacing> = {},
  ) {
    this.counts = { offered: 0, uncertain: [], lastId: firstId - 1, maxDueMs: 0 };
    this.pacing = { ...DEFAULT_PACING, ...pacing };
  }

  setRate(rate: number): void {
    this.rate = rate;
    if (rate > 0) this.run();
  }

  /** Owe `count` more tasks now, on top of the rate's credit. */
  grant(count: number): void {
    this.credit += count;
    this.run();
  }

  /** Tasks owed or in a call not yet resolved: what a depth-target top-up must not ask for again. */
  unsent(): number {
    return Math.floor(this.credit) + this.inFlight;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.running = false;
    await this.done;
  }

  snapshot(): ProducerCounts {
    return { ...this.counts, uncertain: [...this.counts.uncertain] };
  }

  private run(): void {
    if (this.running || this.stopped) return;
    this.running = true;
    this.done = this.loop();
  }

  /** Due now for `nowShare` of the ids, else spread over the next `aheadMs` (deterministic by id). */
  private task(id: number, now: number): LongTask {
    const later = (id * LATER_FACTOR) % 1000 >= this.nowShare * 1000;
    return { id, dueMs: later ? now + 1 + ((id * AHEAD_FACTOR) % this.aheadMs) : now };
  }

  private async loop(): Promise<void> {
    let last = Date.now();
    while (this.running) {
      const now = Date.now();
      this.credit += (this.rate * (now - last)) / 1000;
      last = now;
      let owed = Math.floor(this.credit);
      this.credit -= owed;
      while (owed > 0 && this.running) {
        const n = Math.min(owed, this.pacing.batchMax);
        owed -= n;
        const at = Date.now();
        const tasks = Array.from({ length: n }, () => this.task(++this.counts.lastId, at));
        this.inFlight = n + owed;
        try {
          await this.system.schedule(tasks);
          this.counts.offered += n;
        } catch (error) {
          this.counts.uncertain.push(...tasks.map((t) => t.id));
          console.error(`producer: ${n} tasks uncertain: ${(error as Error).message}`);
          await sleep(200);
        }
        for (const t of tasks) if (t.dueMs > this.counts.maxDueMs) this.counts.maxDueMs = t.dueMs;
      }
      this.inFlight = 0;
      await sleep(this.pacing.tickMs);
    }
  }
}
