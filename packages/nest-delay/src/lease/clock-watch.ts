import { DatabaseClock, SystemClock } from '../clock/index.js';
import { errorText } from '../delay.messages.js';
import { databaseNowMs } from './lease-statements.js';
import type { Database } from '../store/sql.js';
import { CLOCK_CORRECTION_ALARM_MS, START_CLOCK_SAMPLES } from '../context/tuning.js';

/** The module's default clock, sampled before any provider reads it, so none sees it step; heartbeats keep it corrected. */
export async function measuredDatabaseClock(db: Database): Promise<DatabaseClock> {
  const clock = new DatabaseClock(new SystemClock());
  try {
    await sampleDatabaseClock(clock, db, START_CLOCK_SAMPLES);
  } catch (error) {
    throw new Error(`DelayModule cannot reach its database: ${errorText(error)}`, {
      cause: error,
    });
  }
  return clock;
}

export async function sampleDatabaseClock(
  clock: DatabaseClock,
  db: Database,
  times: number,
): Promise<void> {
  for (let i = 0; i < times; i++) {
    const sentMs = clock.localNow();
    const databaseMs = await databaseNowMs(db.pool);
    clock.sample({ sentMs, databaseMs, receivedMs: clock.localNow() });
  }
}

/** The log message on the correction in use. */
export function clockMessage(clock: DatabaseClock): string {
  const correction = Math.round(clock.correctionMs);
  const roundTrip = clock.roundTripMs === undefined ? '?' : clock.roundTripMs.toFixed(1);
  return (
    `System clock corrected by ${correction >= 0 ? '+' : ''}${correction} ms to the database's ` +
    `(round trip ${roundTrip} ms): due times, leases and retention follow the database's clock`
  );
}

/** Logs once when the correction goes past the alarm (the host's NTP needs a look) and once when it is back. */
export class ClockWatch {
  private alarmed = false;

  constructor(
    private readonly clock: DatabaseClock,
    private readonly log: { warn(message: string): void; log(message: string): void },
  ) {}

  check(): void {
    const large = Math.abs(this.clock.correctionMs) > CLOCK_CORRECTION_ALARM_MS;
    if (large && !this.alarmed) this.log.warn(`${clockMessage(this.clock)}; check the host's NTP`);
    else if (!large && this.alarmed)
      this.log.log(`System clock back within ${CLOCK_CORRECTION_ALARM_MS} ms of the database's`);
    this.alarmed = large;
  }
}
