import { DEFERRABLE_READ_EVERY_MS } from '../context/tuning.js';
/**
 * Whether the database has deferrable constraints, as the last claim that
 * read it saw. The read scans pg_constraint and pg_trigger, which have no
 * index for it: on an app's schema of hundreds of tables with their foreign
 * keys (four triggers each) that was most of an attempt note's cost, paid by
 * every claim, for an answer that changes only with a migration. So a claim
 * reads it when none has for DEFERRABLE_READ_EVERY_MS, and after a claim that could not
 * commit (a deferred constraint added since may be why): in between, a claim
 * uses the last answer. A constraint made deferrable in between fails the
 * COMMIT of the claims that break it until the next read, and those are
 * retried, as any claim that could not commit.
 */
export class DeferrableMemo {
  private value: boolean | undefined;
  private readAtMs = -Infinity;

  /** The last answer, or undefined when a claim should read it now (at `nowMs`, monotonic). */
  known(nowMs: number): boolean | undefined {
    return nowMs - this.readAtMs < DEFERRABLE_READ_EVERY_MS ? this.value : undefined;
  }

  read(value: boolean, nowMs: number): void {
    this.value = value;
    this.readAtMs = nowMs;
  }

  /** A claim could not commit: the next one reads it again. */
  forget(): void {
    this.readAtMs = -Infinity;
  }
}
