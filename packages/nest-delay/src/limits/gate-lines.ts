import { compareIds } from '../task-ref.js';
import type { TaskId } from '../task.types.js';
import { isLimited, NO_LIMIT, type ResolvedLimit } from '../task-limit.js';
import type { TypeLimitRow } from './limit-statements.js';
import type {
  GateClaim,
  GateItem,
  GateLinesConfig,
  GateOutcome,
  Line,
  TypeLimits,
} from './gate-line.types.js';

/**
 * The limit gate's lines, pure (the caller passes `nowMs`): which waiting
 * task goes next, in what share, and how a line waits after its claim; and
 * the book of limits they follow (LimitBook, at the end).
 */
export class GateLines {
  private readonly lines = new Map<string, Line>();
  /** Ids waiting in a line or in a claim of the gate. */
  private readonly waitingIds = new Set<TaskId>();
  private claims = 0; // started from the lines: a line's lastClaim is this count then
  private count = 0;

  constructor(
    private readonly limitsOf: (type: string) => TypeLimits,
    private readonly config: GateLinesConfig,
  ) {}

  /** Tasks waiting in lines (not those in a claim). */
  get size(): number {
    return this.count;
  }

  get capacity(): number {
    return this.config.capacity;
  }

  /** Tasks waiting here, by type. */
  waitingByType(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const line of this.lines.values())
      counts.set(line.type, (counts.get(line.type) ?? 0) + line.waiting.length);
    return counts;
  }

  /** Tasks in lines that may start now: they leave at the claims' pace, like the dispatcher's queue. */
  readySize(nowMs: number): number {
    let size = 0;
    for (const line of this.lines.values())
      if (this.ready(line, nowMs)) size += line.waiting.length;
    return size;
  }

  hasReady(nowMs: number): boolean {
    for (const line of this.lines.values()) if (this.ready(line, nowMs)) return true;
    return false;
  }

  /** A task joins its line in due order. 'here': waiting already; 'shed': the gate is full. */
  add(
    task: { id: TaskId; type: string; key: string; dueAtMs: number },
    nowMs: number,
  ): 'added' | 'here' | 'shed' {
    // In a line or in a claim of the gate, which accounts for it.
    if (this.waitingIds.has(task.id)) return 'here';
    if (this.count >= this.config.capacity) return 'shed';
    this.waitingIds.add(task.id);
    const line = this.lineOf(task.type, task.key);
    insertInDueOrder(line.waiting, {
      id: task.id,
      dueAtMs: task.dueAtMs,
      sinceMs: Math.max(nowMs, task.dueAtMs),
      alone: false,
    });
    this.count++;
    return 'added';
  }

  /**
   * The next claim to run, or undefined: of the lines ready, the one whose
   * head is due first; among heads due together, the one that waited
   * longest since its last claim. `canRunAlone`: no other claim is in
   * flight, so a task that must run alone may go.
   */
  next(nowMs: number, canRunAlone: boolean): GateClaim | undefined {
    let best: Line | undefined;
    for (const line of this.lines.values()) {
      if (!this.ready(line, nowMs)) continue;
      if (line.waiting[0].alone && !canRunAlone) continue;
      if (
        !best ||
        line.waiting[0].dueAtMs < best.waiting[0].dueAtMs ||
        (line.waiting[0].dueAtMs === best.waiting[0].dueAtMs && line.lastClaim < best.lastClaim)
      )
        best = line;
    }
    if (!best) return undefined;
    const limits = this.limitsOf(best.type);
    const items = this.take(best, limits.effective.concurrency);
    this.count -= items.length;
    best.running++;
    best.lastClaim = ++this.claims;
    if (limits.effective.rate) best.takingCredit = true;
    return {
      line: best,
      items,
      declared: limits.declared,
      effective: limits.effective,
      creditsAtTake: { putBacks: best.putBacks, stamps: best.stamps },
    };
  }

  /** Its claim has its rate credit (or found none): the line's next may ask for one. */
  creditTaken(claim: GateClaim): boolean {
    if (!claim.line.takingCredit) return false;
    claim.line.takingCredit = false;
    return true;
  }

  /** What `claim` came to: `back` (its tasks not run) rejoins the line, which moves on or waits. */
  ended(claim: GateClaim, outcome: GateOutcome, back: GateItem[], nowMs: number): void {
    const { line } = claim;
    line.running--;
    line.takingCredit = false;
    const returned = new Set(back.map((item) => item.id));
    for (const item of claim.items) if (!returned.has(item.id)) this.waitingIds.delete(item.id);
    for (const item of back) insertInDueOrder(line.waiting, item);
    this.count += back.length;
    // One of its claims here ended: its seat is free, whoever was kept waiting tries now.
    if (outcome.kind !== 'busy' && line.blocked === 'busy') {
      line.blocked = null;
      line.readyAtMs = 0;
    }
    switch (outcome.kind) {
      case 'ran':
        // A rate wait another claim of the line learned stands (its timer is armed by it).
        if (line.blocked !== 'rate') line.blocked = null;
        line.backoffMs = 0;
        break;
      case 'done':
      case 'paused':
        break;
      case 'busy':
        // Held elsewhere: look again after a backoff, or when a claim of its own here ends.
        this.backOff(line, nowMs, 'busy');
        break;
      case 'stale':
        this.backOff(line, nowMs, 'rate');
        break;
      case 'rate': {
        const atMs = outcome.nextFreeMs;
        // A put-back (the take skipped its locked row) or, when all were in
        // flight, a stamp during the take woke no one: ask again now.
        const since = claim.creditsAtTake;
        // Set by this answer alone: another claim's end keeps a wait it learned.
        line.creditsInFlight = false;
        if (line.putBacks !== since.putBacks || (atMs === null && line.stamps !== since.stamps)) {
          line.blocked = null;
          line.readyAtMs = 0;
          break;
        }
        // All in flight, or due by this clock but not yet by the database's.
        if (atMs === null || !Number.isFinite(atMs) || atMs <= nowMs) {
          this.backOff(line, nowMs, 'rate');
          line.creditsInFlight = atMs === null;
        } else {
          line.blocked = 'rate';
          line.readyAtMs = Math.ceil(atMs);
        }
        break;
      }
    }
    this.dropIfEmpty(line);
  }

  /**
   * A credit of the line was put back (`returned`) or stamped. A line
   * waiting for a rate asks again now after a put-back, or after a stamp
   * when it found every credit in flight (it knew no time to wait for).
   * Returns whether the line may now ask.
   */
  creditSettled(type: string, key: string, returned: boolean): boolean {
    const line = this.lines.get(lineId(type, key));
    if (!line) return false;
    if (returned) line.putBacks++;
    else line.stamps++;
    if (line.blocked !== 'rate' || !(returned || line.creditsInFlight)) return false;
    line.blocked = null;
    line.readyAtMs = 0;
    line.backoffMs = 0;
    line.creditsInFlight = false;
    return true;
  }

  /** Limits changed or a pause came or went: the type's lines try again now. */
  retryType(type: string): void {
    for (const line of this.lines.values()) {
      if (line.type !== type) continue;
      line.readyAtMs = 0;
      line.blocked = null;
      line.backoffMs = 0;
    }
  }

  /** Takes out the tasks of lines whose type no longer gates (resumed, limits removed). */
  takeUngated(gates: (type: string) => boolean): TaskId[] {
    const ids: TaskId[] = [];
    for (const line of this.lines.values()) {
      if (gates(line.type) || line.waiting.length === 0) continue;
      for (const item of line.waiting.splice(0)) {
        this.waitingIds.delete(item.id);
        ids.push(item.id);
      }
      this.dropIfEmpty(line);
    }
    this.count -= ids.length;
    return ids;
  }

  /** Lines whose wait is over at `nowMs` may ask again (a busy line's claim looks at the seats itself). */
  wakeDue(nowMs: number): void {
    for (const line of this.lines.values())
      if (line.blocked !== null && line.readyAtMs <= nowMs) line.blocked = null;
  }

  /** When the earliest line's wait ends (Infinity: none); `credits`: a credit's known time only. */
  nextWakeMs(credits = false): number {
    let atMs = Infinity;
    for (const line of this.lines.values()) {
      const waits = credits
        ? line.blocked === 'rate' && !line.creditsInFlight
        : line.blocked !== null;
      if (line.waiting.length > 0 && waits) atMs = Math.min(atMs, line.readyAtMs);
    }
    return atMs;
  }

  /** Waiting in a line or in a claim of the gate. */
  has(id: TaskId): boolean {
    return this.waitingIds.has(id);
  }

  clear(): void {
    this.lines.clear();
    this.waitingIds.clear();
    this.count = 0;
  }

  private ready(line: Line, nowMs: number): boolean {
    if (line.waiting.length === 0 || line.readyAtMs > nowMs || line.blocked === 'busy')
      return false;
    if (line.takingCredit) return false;
    const limits = this.limitsOf(line.type);
    if (limits.pausedAt !== null) return false;
    const { concurrency } = limits.effective;
    return concurrency === null || line.running < concurrency;
  }

  /**
   * A claim's share of its line: a task that must run alone by itself, else
   * the line spread over the seats it may still use here, up to a batch.
   */
  private take(line: Line, concurrency: number | null): GateItem[] {
    if (line.waiting[0].alone) return [line.waiting.shift()!];
    const free = Math.max(1, (concurrency ?? this.config.spread) - line.running);
    const size = Math.min(
      this.config.batchSize,
      Math.max(1, Math.ceil(line.waiting.length / free)),
    );
    let n = 0;
    while (n < size && n < line.waiting.length && !line.waiting[n].alone) n++;
    return line.waiting.splice(0, n);
  }

  private backOff(line: Line, nowMs: number, blocked: 'busy' | 'rate'): void {
    const { firstBackoffMs, maxBackoffMs } = this.config;
    line.backoffMs = Math.min(
      maxBackoffMs,
      line.backoffMs === 0 ? firstBackoffMs : line.backoffMs * 2,
    );
    line.blocked = blocked;
    line.readyAtMs = nowMs + line.backoffMs;
  }

  private dropIfEmpty(line: Line): void {
    if (line.waiting.length === 0 && line.running === 0)
      this.lines.delete(lineId(line.type, line.key));
  }

  private lineOf(type: string, key: string): Line {
    const id = lineId(type, key);
    let line = this.lines.get(id);
    if (!line) {
      line = {
        type,
        key,
        waiting: [],
        running: 0,
        readyAtMs: 0,
        blocked: null,
        backoffMs: 0,
        lastClaim: 0,
        takingCredit: false,
        creditsInFlight: false,
        putBacks: 0,
        stamps: 0,
      };
      this.lines.set(id, line);
    }
    return line;
  }
}

const lineId = (type: string, key: string) => `${type}\u001f${key}`;

/** Tasks mostly arrive in due order: found from the end. */
function insertInDueOrder(waiting: GateItem[], item: GateItem): void {
  let i = waiting.length;
  while (
    i > 0 &&
    (waiting[i - 1].dueAtMs > item.dueAtMs ||
      (waiting[i - 1].dueAtMs === item.dueAtMs && compareIds(waiting[i - 1].id, item.id) > 0))
  )
    i--;
  waiting.splice(i, 0, item);
}

/**
 * Which types are limited or paused, for routing fired tasks and pacing the
 * gate's lines. A copy only: the claims read `delay_type_limit` themselves,
 * so a change holds from the next claim on every instance.
 */
export class LimitBook {
  private rows = new Map<string, TypeLimitRow>();

  constructor(private readonly declaredOf: (type: string) => ResolvedLimit | undefined) {}

  replace(rows: TypeLimitRow[]): void {
    this.rows = new Map(rows.map((row) => [row.type, row]));
  }

  /** A change made here, before the next read. */
  apply(row: Partial<TypeLimitRow> & { type: string }): void {
    const current = this.rows.get(row.type) ?? {
      type: row.type,
      paused_at: null,
      overridden: false,
      concurrency: null,
      rate_starts: null,
      rate_per_ms: null,
      updated_at: new Date(0),
      declared_concurrency: null,
      declared_rate_starts: null,
      declared_rate_per_ms: null,
      declared_per_key: false,
      declared_at: null,
      declared_by: null,
    };
    this.rows.set(row.type, { ...current, ...row });
  }

  /** Declared: as stored at boot by the last instance to boot, else this instance's code. */
  of(type: string): TypeLimits {
    const row = this.rows.get(type);
    const declared = row?.declared_at
      ? stored(row.declared_concurrency, row.declared_rate_starts, row.declared_rate_per_ms)
      : (this.declaredOf(type) ?? NO_LIMIT);
    const override = row?.overridden
      ? stored(row.concurrency, row.rate_starts, row.rate_per_ms)
      : null;
    return {
      declared,
      override,
      effective: override ?? declared,
      pausedAt: row?.paused_at ?? null,
    };
  }

  /** Tasks of this type go through the gate. */
  gates(type: string): boolean {
    const limits = this.of(type);
    return limits.pausedAt !== null || isLimited(limits.effective);
  }
}

/** A limit from its stored columns (a rate needs both of its own). */
function stored(
  concurrency: number | null,
  starts: number | null,
  perMs: string | null,
): ResolvedLimit {
  return {
    concurrency,
    rate: starts !== null && perMs !== null ? { starts, perMs: Number(perMs) } : null,
  };
}
