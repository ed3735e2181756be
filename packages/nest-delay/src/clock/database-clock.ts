import { assertTimerDeadline, type Clock, type TimerHandle } from './clock.js';

/** One reading of the database's clock, bracketed by the local clock before and after. */
export interface ClockSample {
  /** Local time when the query was sent. */
  sentMs: number;
  /** The database's clock, read while the query ran. */
  databaseMs: number;
  /** Local time when the reply came. */
  receivedMs: number;
}

/** Samples kept: the correction follows the best of the last few heartbeats. */
const SAMPLE_WINDOW = 8;

/**
 * The database's time, read through this process's monotonic clock: the
 * clock every decision about a task uses (due times, lateness, leases,
 * retention), so that an instance whose system clock is off by seconds fires
 * nothing early by the database's clock and steals no lease.
 *
 * It adds a correction to the local clock, measured the way NTP does: each
 * sample brackets one reading of the database's clock between the local
 * times before and after the round trip; of the last few samples the one
 * with the shortest round trip is trusted most; and the correction is the
 * lower bound that sample allows (the database read its clock at the latest
 * when the reply came), so this clock is never ahead of the database's, only
 * behind it by at most one round trip. It never steps back: a correction
 * that falls makes it stand still until the local clock has caught up (a
 * slew at rate zero), which delays tasks but never fires one early. A
 * correction that rises moves it forward at once, and armed timers are
 * re-armed for the new time.
 *
 * Until the first sample it is the local clock, and the first sample may
 * move it either way: DelayModule takes its first samples before any of its
 * providers is built (measuredDatabaseClock), then one at every heartbeat.
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
