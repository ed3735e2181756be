/**
 * The offered load, spread over every live instance as a load balancer
 * spreads requests: each runs a producer at rate / live instances, with ids
 * of its own (a block of ID_BLOCK per incarnation of an instance, so a
 * relaunched one never reuses the ids of the one killed). An engine that
 * runs what its instance scheduled would otherwise put the whole load on
 * the one instance that produces.
 *
 * Before kill-worker's SIGKILL the instance stops producing and its counts
 * are read: the kill hits its claims and handlers, and the ledger check
 * still knows every id it offered. Its share goes to the others meanwhile.
 */
import type { Instance } from './instance.js';
import type { ProducerCounts } from './producer.js';

/** Ids of one producer incarnation: [firstId, firstId + ID_BLOCK). */
export const ID_BLOCK = 1_000_000_000;

export interface ProducerRange {
  firstId: number;
  counts: ProducerCounts;
}

export interface LoadTotals {
  offered: number;
  ranges: { first: number; last: number }[];
  uncertain: number[];
  maxDueMs: number;
}

interface Producing {
  instance: Instance;
  firstId: number;
  /** Counts at its last read; final once it is retired. */
  counts: ProducerCounts;
  retired: boolean;
}

export class Load {
  private readonly producing: Producing[] = [];
  private rate = 0;

  constructor(
    private readonly nowShare: number,
    private readonly aheadMs: number,
  ) {}

  /** Starts a producer in `instance` and spreads `rate` (per second, all instances) again. */
  async join(instance: Instance, rate = this.rate): Promise<void> {
    const firstId = ID_BLOCK * (this.producing.length + 1);
    this.producing.push({
      instance,
      firstId,
      counts: { offered: 0, uncertain: [], lastId: firstId - 1, maxDueMs: 0 },
      retired: false,
    });
    await instance.call('produce', {
      firstId,
      nowShare: this.nowShare,
      aheadMs: this.aheadMs,
      rate: 0,
    });
    await this.setRate(rate);
  }

  /** Stops `instance`'s producer for good (before it is killed) and reads its final counts. */
  async retire(instance: Instance): Promise<void> {
    const p = this.producing.find((x) => x.instance === instance && !x.retired);
    if (!p) return;
    p.retired = true;
    const counts = await instance.call<ProducerCounts>('stop-producing');
    p.counts = counts;
    await this.setRate(this.rate);
  }

  async setRate(rate: number): Promise<void> {
    this.rate = rate;
    const live = this.producing.filter((p) => !p.retired);
    await Promise.all(
      live.map((p) => p.instance.call('rate', { rate: rate / Math.max(1, live.length) })),
    );
  }

  /** Offered so far, over every producer (a live one's counts read now). */
  async totals(): Promise<LoadTotals> {
    await Promise.all(
      this.producing
        .filter((p) => !p.retired && !p.instance.exited)
        .map(async (p) => {
          const u = await p.instance.usage().catch(() => null);
          if (u?.producer) p.counts = u.producer;
        }),
    );
    return {
      offered: this.producing.reduce((s, p) => s + p.counts.offered, 0),
      ranges: this.producing
        .filter((p) => p.counts.lastId >= p.firstId)
        .map((p) => ({ first: p.firstId, last: p.counts.lastId })),
      uncertain: this.producing.flatMap((p) => p.counts.uncertain),
      maxDueMs: Math.max(0, ...this.producing.map((p) => p.counts.maxDueMs)),
    };
  }
}
