import type {
  DelayObserver,
  TaskDeadLetteredEvent,
  TaskExecutedEvent,
  TaskFailedEvent,
} from '../delay-observer.js';

/** Seconds of history kept: the page's "last minutes". */
export const PULSE_SECONDS = 300;

/**
 * Upper bounds of the lateness buckets, in ms (the last one is open): log-ish
 * steps an operator reads at a glance: on time, a little late, a minute late.
 */
export const LATENESS_BOUNDS_MS = [
  1, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000,
] as const;

interface Second {
  /** Which second (epoch s) this slot holds now; slots are reused around the ring. */
  at: number;
  executed: number;
  failed: number;
  dead: number;
  /** Executed tasks per lateness bucket; one more than the bounds, for "over the last". */
  lateness: number[];
}

export interface LatenessView {
  /** Executed tasks in the window the figures cover. */
  count: number;
  /** Percentiles in ms, the upper bound of the bucket they fall in (null with no task). */
  p50: number | null;
  p90: number | null;
  p99: number | null;
  /** Per bucket: tasks at most `leMs` late (null: over the last bound). */
  buckets: Array<{ leMs: number | null; count: number }>;
}

/** How long one type's executed tasks waited behind its shared limit or its pause. */
export interface LimitWaitView extends LatenessView {
  type: string;
  /** The longest wait in the window, in ms (null with no task). */
  maxMs: number | null;
}

export interface PulseView {
  /** The last second the series ends with (epoch ms of its start). */
  until: string;
  seconds: number;
  /** Oldest first, one number per second. */
  executed: number[];
  failed: number[];
  dead: number[];
  /** The engine's lateness: claim time − due time, less any wait behind a limit. */
  lateness: LatenessView;
  /**
   * Per type whose tasks waited behind a limit or a pause since the app
   * started, by type name: its executed tasks' waits over the window (the
   * same buckets as lateness).
   */
  limitWait: LimitWaitView[];
}

/** One type's limit waits in one second. */
interface WaitSecond {
  at: number;
  /** Executed tasks per wait bucket (one more than the bounds). */
  waits: number[];
  maxMs: number;
}

const bucketOf = (ms: number) => {
  const i = LATENESS_BOUNDS_MS.findIndex((bound) => ms <= bound);
  return i === -1 ? LATENESS_BOUNDS_MS.length : i;
};

/**
 * What this instance ran over the last PULSE_SECONDS, second by second, with
 * a histogram of executed tasks' lateness: a DelayObserver, so all of it is
 * in memory and counting costs a few array writes per task (no table read).
 * An executed task is filed under the second of its claim (due time +
 * lateness + limit wait, by the module's clock); failures and dead letters carry no claim
 * time, so they are filed when they are heard of, by the same clock
 * (`clockNow`). Percentiles are bucket bounds: exact enough to read, and
 * constant memory whatever the rate.
 *
 * Time a task waited behind its type's shared limit or pause (`limitWaitMs`)
 * is not lateness: it is kept per type, in a ring of its own made the first
 * time one of the type's tasks waits (types never limited cost nothing), and
 * the task is filed under its claim's second, after the wait.
 */
export class AdminPulse implements DelayObserver {
  private readonly ring: Second[] = Array.from({ length: PULSE_SECONDS }, () => ({
    at: -1,
    executed: 0,
    failed: 0,
    dead: 0,
    lateness: new Array<number>(LATENESS_BOUNDS_MS.length + 1).fill(0),
  }));
  /** Limit waits, per type that ever waited. */
  private readonly waits = new Map<string, WaitSecond[]>();
  /** `clockNow`: the module's clock, by which failures and dead letters are filed. */
  constructor(private readonly clockNow: () => number = Date.now) {}

  onExecuted({ type, dueAt, latenessMs, limitWaitMs = 0 }: TaskExecutedEvent): void {
    const claimMs = dueAt.getTime() + latenessMs + limitWaitMs;
    const second = this.second(claimMs);
    if (!second) return;
    second.executed++;
    second.lateness[bucketOf(latenessMs)]++;
    let ring = this.waits.get(type);
    if (!ring) {
      if (limitWaitMs <= 0) return;
      ring = Array.from({ length: PULSE_SECONDS }, () => ({
        at: -1,
        waits: new Array<number>(LATENESS_BOUNDS_MS.length + 1).fill(0),
        maxMs: 0,
      }));
      this.waits.set(type, ring);
    }
    const slot = slotOf(ring, claimMs);
    if (!slot) return;
    slot.waits[bucketOf(limitWaitMs)]++;
    slot.maxMs = Math.max(slot.maxMs, limitWaitMs);
  }

  onFailed(_event: TaskFailedEvent): void {
    const second = this.second(this.clockNow());
    if (second) second.failed++;
  }

  onDeadLettered(_event: TaskDeadLetteredEvent): void {
    const second = this.second(this.clockNow());
    if (second) second.dead++;
  }

  /** The last `seconds` (at most PULSE_SECONDS) up to the one holding `nowMs`. */
  view(nowMs: number, seconds = PULSE_SECONDS): PulseView {
    const span = Math.min(Math.max(1, Math.floor(seconds)), PULSE_SECONDS);
    const last = Math.floor(nowMs / 1000);
    const executed: number[] = [];
    const failed: number[] = [];
    const dead: number[] = [];
    const histogram = new Array<number>(LATENESS_BOUNDS_MS.length + 1).fill(0);
    for (let at = last - span + 1; at <= last; at++) {
      const slot = this.ring[((at % PULSE_SECONDS) + PULSE_SECONDS) % PULSE_SECONDS];
      const kept = slot.at === at;
      executed.push(kept ? slot.executed : 0);
      failed.push(kept ? slot.failed : 0);
      dead.push(kept ? slot.dead : 0);
      if (kept) slot.lateness.forEach((n, i) => (histogram[i] += n));
    }
    const limitWait = [...this.waits]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([type, ring]): LimitWaitView => {
        const waits = new Array<number>(LATENESS_BOUNDS_MS.length + 1).fill(0);
        let maxMs: number | null = null;
        for (let at = last - span + 1; at <= last; at++) {
          const slot = ring[((at % PULSE_SECONDS) + PULSE_SECONDS) % PULSE_SECONDS];
          if (slot.at !== at) continue;
          slot.waits.forEach((n, i) => (waits[i] += n));
          if (slot.waits.some((n) => n > 0)) maxMs = Math.max(maxMs ?? 0, slot.maxMs);
        }
        return { type, ...latenessView(waits), maxMs };
      });
    return {
      until: new Date(last * 1000).toISOString(),
      seconds: span,
      executed,
      failed,
      dead,
      lateness: latenessView(histogram),
      limitWait,
    };
  }

  /** The slot of the second holding `ms`, emptied if it held an older second; none if too old. */
  private second(ms: number): Second | undefined {
    const at = Math.floor(ms / 1000);
    const slot = this.ring[((at % PULSE_SECONDS) + PULSE_SECONDS) % PULSE_SECONDS];
    if (slot.at === at) return slot;
    if (slot.at > at) return undefined;
    slot.at = at;
    slot.executed = slot.failed = slot.dead = 0;
    slot.lateness.fill(0);
    return slot;
  }
}

function latenessView(histogram: number[]): LatenessView {
  const count = histogram.reduce((a, b) => a + b, 0);
  const bound = (i: number) => (i < LATENESS_BOUNDS_MS.length ? LATENESS_BOUNDS_MS[i] : null);
  const percentile = (p: number): number | null => {
    if (count === 0) return null;
    const rank = Math.ceil(p * count);
    let seen = 0;
    for (let i = 0; i < histogram.length; i++) {
      seen += histogram[i];
      // Over the last bound, the last bound is the most that can be said.
      if (seen >= rank) return bound(i) ?? LATENESS_BOUNDS_MS[LATENESS_BOUNDS_MS.length - 1];
    }
    return null;
  };
  return {
    count,
    p50: percentile(0.5),
    p90: percentile(0.9),
    p99: percentile(0.99),
    buckets: histogram.map((n, i) => ({ leMs: bound(i), count: n })),
  };
}

/** A type's wait slot for the second holding `ms`, emptied if it held an older second; none if too old. */
function slotOf(ring: WaitSecond[], ms: number): WaitSecond | undefined {
  const at = Math.floor(ms / 1000);
  const slot = ring[((at % PULSE_SECONDS) + PULSE_SECONDS) % PULSE_SECONDS];
  if (slot.at === at) return slot;
  if (slot.at > at) return undefined;
  slot.at = at;
  slot.waits.fill(0);
  slot.maxMs = 0;
  return slot;
}
