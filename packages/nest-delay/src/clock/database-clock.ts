import { assertTimerDeadline, type Clock, type TimerHandle } from './clock.js';

/** One reading of the database's clock, bracketed by the local clock when the query was sent and its reply came. */
export interface ClockSample {
  sentMs: number;
  databaseMs: number;
  receivedMs: number;
}

/** Samples kept: the correction follows the best of the last few heartbeats. */
const SAMPLE_WINDOW = 8;

/**
 * The database's time, read through this process's monotonic clock: what
 * every decision about a task uses, so an instance whose system clock is off
 * fires nothing early and steals no lease.
 *
 * Invariants: never ahead of the database (the correction is the lower bound
 * of the sample with the shortest recent round trip, as NTP does), behind it
 * by at most one round trip, and never steps back (a falling correction makes
 * it stand still until the local clock catches up; a rising one re-arms the
 * timers). Until the first sample it is the local clock, and that sample may
 * move it either way: DelayModule samples before building its providers.
 */
export class DatabaseClock implements Clock {
  private correction = 0;
  private lastMs = -Infinity;
  private readonly samples: Array<{ correctionMs: number; roundTripMs: number }> = [];
  private readonly armed = new Set<() => void>();

  constructor(private readonly local: Clock) {}

  /** The uncorrected local time: what a sample is bracketed with. */
  localNow(): number {
    return this.local.now();
  }

  now(): number {
    const nowMs = Math.max(this.lastMs, this.local.now() + this.correction);
    // Unmeasured, it is only the local clock, and the first sample may move it either way.
    if (this.samples.length > 0) this.lastMs = nowMs;
    return nowMs;
  }

  /** What is added to the local clock (database minus local, at most one round trip low). */
  get correctionMs(): number {
    return this.correction;
  }

  /** The round trip of the sample the correction comes from; undefined before the first. */
  get roundTripMs(): number | undefined {
    return this.best()?.roundTripMs;
  }

  get measured(): boolean {
    return this.samples.length > 0;
  }

  sample({ sentMs, databaseMs, receivedMs }: ClockSample): void {
    if (!(receivedMs >= sentMs) || !Number.isFinite(databaseMs)) return;
    this.samples.push({ correctionMs: databaseMs - receivedMs, roundTripMs: receivedMs - sentMs });
    if (this.samples.length > SAMPLE_WINDOW) this.samples.shift();
    const previous = this.correction;
    this.correction = this.best()!.correctionMs;
    if (this.correction > previous) for (const rearm of [...this.armed]) rearm();
  }

  setTimer(atMs: number, callback: () => void): TimerHandle {
    assertTimerDeadline(atMs);
    let handle: TimerHandle | undefined;
    const arm = (): void => {
      handle?.cancel();
      // The local instant this clock reaches atMs, with the correction as it is now.
      handle = this.local.setTimer(atMs - this.correction, () => {
        if (this.now() < atMs) return arm();
        this.armed.delete(arm);
        callback();
      });
    };
    this.armed.add(arm);
    arm();
    return {
      cancel: () => {
        this.armed.delete(arm);
        handle?.cancel();
      },
    };
  }

  /** The sample with the shortest round trip, the latest of equals. */
  private best() {
    let best: (typeof this.samples)[number] | undefined;
    for (const sample of this.samples)
      if (!best || sample.roundTripMs <= best.roundTripMs) best = sample;
    return best;
  }
}
