/**
 * How many batch claims of fired tasks may run at once: up to `concurrency`
 * while the database answers at its usual speed, fewer while it is slow.
 * Learnt from the claims this instance ran; it has no clock of its own (the
 * dispatcher passes times in).
 *
 * A claim costs a start (a connection, its attempt note, its claim
 * statement: two round trips and two commits) plus its tasks' run. Spread
 * over every free worker, a steady stream of fast tasks became a claim per
 * tick's one or two ids, all competing for the server's CPU: at 1,000
 * tasks/s on two cores, with eight claims at a time the server spent half
 * again as much per task as with one, and tasks were later for it
 * (bench/HISTORY.md, "Fewer claims while starts are slow"). So, as TCP
 * Vegas does with a window: while starts take more than twice their best of
 * late (a queue has formed, in the server or in this process), one claim
 * fewer at a time; while they are back near their best and claims were
 * wanted, one more, up to `concurrency`; and one more whenever ids have
 * been held back for QUIET_MS with no claim starting (the claims in flight
 * are long ones). Ids then wait for a claim to end and go together. Slow
 * handlers (an HTTP call) on a quiet database keep every claim; on a
 * struggling one they ease its load too. The first WARM_UP_STARTS starts
 * teach it nothing.
 */
export class ClaimPacing {
  /** Moving average of a start (ms). */
  private startMs: number | undefined;
  /** Best starts in this window and the one before: the unloaded start. */
  private bestNow = Infinity;
  private bestBefore = Infinity;
  private windowFrom: number | undefined;
  private current: number | undefined;
  private changedAt = -Infinity;
  private lastStartAt = -Infinity;
  private starts = 0;
  /** Claims were held back since the last change: one more would have been used. */
  private wanted = false;

  /** `concurrency`: the most batch claims ever allowed at once (the module's option). */
  constructor(private readonly concurrency: number) {}

  /** Batch claims that may run at once. */
  limit(): number {
    return this.current ?? this.concurrency;
  }

  /**
   * The dispatcher held ids back for the limit at `nowMs`. With no claim
   * started for QUIET_MS, the claims in flight are long ones (a slow
   * handler), and no start will come to say so: one more is allowed, so
   * ids never wait on a claim that is not coming. Returns when to ask
   * again if nothing else happens (ms from now), or undefined.
   */
  heldBack(nowMs: number): number | undefined {
    this.wanted = true;
    const limit = this.limit();
    if (limit >= this.concurrency) return undefined;
    const quietFor = nowMs - Math.max(this.lastStartAt, this.changedAt);
    if (quietFor < QUIET_MS) return QUIET_MS - quietFor;
    this.step(nowMs, limit + 1);
    return 0;
  }

  /** A batch claim took `ms` from its launch to having its tasks. */
  started(nowMs: number, ms: number): void {
    this.lastStartAt = nowMs;
    // A new pool's first claims open connections and prepare statements: no guide to either.
    if (++this.starts <= WARM_UP_STARTS) return;
    this.startMs = this.startMs === undefined ? ms : this.startMs + WEIGHT * (ms - this.startMs);
    this.windowFrom ??= nowMs;
    if (nowMs - this.windowFrom >= BEST_WINDOW_MS) {
      this.bestBefore = this.bestNow;
      this.bestNow = Infinity;
      this.windowFrom = nowMs;
    }
    this.bestNow = Math.min(this.bestNow, ms);
    if (nowMs - this.changedAt < STEP_MS) return;
    const best = Math.min(this.bestNow, this.bestBefore);
    const limit = this.limit();
    if (this.startMs > SLOW * best && limit > 1) this.step(nowMs, limit - 1);
    else if (this.startMs < QUICK * best && this.wanted && limit < this.concurrency)
      this.step(nowMs, limit + 1);
  }

  private step(nowMs: number, limit: number): void {
    this.current = limit;
    this.changedAt = nowMs;
    this.wanted = false;
  }
}

/** Weight of the newest start in the moving average: about the last ten count. */
const WEIGHT = 0.2;
/** Starts slower than this many times their best mean a queue somewhere: one claim fewer. */
const SLOW = 2;
/** Starts quicker than this many times their best: room for one more. */
const QUICK = 1.5;
/** At most one step a this often: each step's effect shows in the starts after it. */
const STEP_MS = 50;
/** Starts not learnt from (see started). */
const WARM_UP_STARTS = 20;
/** No claim started for this long while ids were held back: the claims in flight are long ones. */
const QUIET_MS = 100;
/** A best start is forgotten after one to two of these: a slower network becomes the new best. */
const BEST_WINDOW_MS = 30_000;
