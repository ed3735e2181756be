import type pg from 'pg';
import { countEffected } from './db.js';
import { Progress, sleep } from './progress.js';

export interface Waited {
  effected: number;
  /** True when the time limit ran out before every task had taken effect. */
  capped: boolean;
}

/**
 * Polls bench_order until `count` orders have taken effect or `timeoutMs`
 * passes (a cap, reported as such), drawing a bar meanwhile.
 */
export async function waitForEffects(
  client: pg.Client,
  count: number,
  label: string,
  timeoutMs: number,
): Promise<Waited> {
  const bar = new Progress(label, count);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const effected = await countEffected(client);
    bar.update(effected);
    if (effected >= count) {
      bar.done();
      return { effected, capped: false };
    }
    if (Date.now() > deadline) {
      bar.done(`capped after ${Math.round(timeoutMs / 1000)} s`);
      return { effected, capped: true };
    }
    await sleep(count > 20_000 ? 500 : 200);
  }
}
