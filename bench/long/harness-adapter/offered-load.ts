/**
 * What decides how many tasks the producer sends, per the harness's modes:
 * - fixed, paced here (PRODUCER_PACING=adapter, the default): the producer's
 *   wall-clock credit at PRODUCER_RATE, changed when the harness rewrites its
 *   rate control file (high-load phases);
 * - fixed, paced by the harness (PRODUCER_PACING=harness): each
 *   `ENQUEUE <n>` line on stdin owes n tasks (HarnessTokens);
 * - depth-target: each depth reading owes what brings the queue back to
 *   TARGET_DEPTH, less what is already on its way.
 */
import { readFile } from 'node:fs/promises';
import type { Producer } from '../producer.js';
import type { HarnessTokens } from './harness-tokens.js';
import type { ContractSettings } from './contract-env.js';

const CONTROL_FILE_EVERY_MS = 1000;

export interface OfferedLoad {
  /** The rate asked for now (0 in depth-target mode). */
  targetRate(): number;
  /** For depth-target mode: called with each depth reading. */
  onDepth(depth: number): void;
  stop(): void;
}

async function readRate(path: string): Promise<number | undefined> {
  try {
    const value = Number((await readFile(path, 'utf8')).trim());
    return Number.isFinite(value) && value >= 0 ? value : undefined;
  } catch {
    return undefined; // not written yet, or being rewritten
  }
}

export function startOfferedLoad(
  settings: ContractSettings,
  producer: Producer,
  tokens: HarnessTokens | undefined,
): OfferedLoad {
  let rate = settings.producerMode === 'fixed' ? settings.producerRate : 0;
  const pacedHere = settings.producerMode === 'fixed' && settings.producerPacing === 'adapter';
  if (pacedHere) producer.setRate(rate);

  const controlFile = settings.rateControlFile;
  const control =
    controlFile && settings.producerMode === 'fixed'
      ? setInterval(async () => {
          const next = await readRate(controlFile);
          if (next === undefined || next === rate) return;
          console.error(`offered load: rate ${rate}/s -> ${next}/s (rate control file)`);
          rate = next;
          if (pacedHere) producer.setRate(rate);
        }, CONTROL_FILE_EVERY_MS)
      : undefined;

  tokens?.feed(producer);

  return {
    targetRate: () => rate,
    onDepth(depth) {
      if (settings.producerMode !== 'depth-target') return;
      const wanted = settings.targetDepth - depth - producer.unsent();
      if (wanted > 0) producer.grant(wanted);
    },
    stop() {
      clearInterval(control);
    },
  };
}
