/**
 * The harness's pacing, when it paces (PRODUCER_PACING=harness, fixed mode):
 * one `ENQUEUE <n>` line on stdin for every n tasks owed. Its pacer starts
 * when it launches the adapter, so the lines written while the engine boots
 * are read from the start and dropped: sent all at once later they would be
 * a burst no phase asked for (the adapter's own pacer, too, starts its clock
 * when the producer starts).
 */
import { createInterface, type Interface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { Producer } from '../producer.js';

export class HarnessTokens {
  private producer: Producer | undefined;
  private dropped = 0;
  private readonly lines: Interface;

  constructor(input: Readable) {
    this.lines = createInterface({ input });
    this.lines.on('line', (line) => {
      const match = /^ENQUEUE (\d+)$/.exec(line.trim());
      if (!match) return;
      if (this.producer) this.producer.grant(Number(match[1]));
      else this.dropped += Number(match[1]);
    });
  }

  /** From now on, tokens owe tasks to `producer`. */
  feed(producer: Producer): void {
    this.producer = producer;
    if (this.dropped > 0)
      console.error(
        `offered load: ${this.dropped} tasks of ENQUEUE tokens sent during boot dropped`,
      );
  }

  close(): void {
    this.lines.close();
  }
}
