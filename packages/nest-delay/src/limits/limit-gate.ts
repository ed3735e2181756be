import type { TimerHandle } from '../clock/index.js';
import { errorText } from '../delay.messages.js';
import type { HandlerRegistry } from '../handler-registry.js';
import { LimitBook } from './limit-book.js';
import { limitKeyOf, type ResolvedLimit } from './task-limit.js';
import type { GatedRow } from '../claim/claim-statements.js';
import { freeSlots, readTypeLimits } from './limit-statements.js';
import { compareIds } from '../task-ref.js';
import type { TaskId } from '../task.types.js';
import type { DelayContext, LifecycleService } from '../runtime/delay-context.js';
import { PeriodicRound } from '../runtime/periodic-round.js';
import {
  GATE_SPREAD,
  LIMIT_BUSY_FIRST_RETRY_MS,
  LIMIT_BUSY_MAX_RETRY_MS,
  LIMIT_REFRESH_MS,
} from '../runtime/tuning.js';

/** One task waiting behind its line's limit. */
export interface GateItem {
  id: TaskId;
  dueAtMs: number;
  /** When it came to the gate: its wait for the limit counts from here. */
  sinceMs: number;
  /** Its last attempt was cut off: its claim must run alone. */
  alone: boolean;
}

/** A type and key with limits of their own: its tasks wait here in due order. */
export interface Line {
  readonly type: string;
  readonly key: string;
  readonly waiting: GateItem[];
  /** Its claims in flight on this instance. */
  running: number;
  /** Not before this (a rate credit frees, or a retry after a busy slot). */
  readyAtMs: number;
  /** Why it last could not start: a slot held elsewhere is looked at before trying again. */
  blocked: 'busy' | 'rate' | null;
  backoffMs: number;
  /** When it last started a claim (a count): among heads due together, the line that waited longest goes first. */
  turn: number;
  /**
   * A claim of it is taking a rate credit: the next waits, so credits go in
   * due order rather than to whichever claim reaches the database first.
   */
  takingCredit: boolean;
}

/** What one gate claim came to, for its line. */
export type GateOutcome =
  | { kind: 'ran' }
  /** Nothing to learn: its tasks were gone, or the claim failed as a whole (the dispatcher holds them). */
  | { kind: 'done' }
  /** Its line's slots are all held elsewhere. */
  | { kind: 'busy' }
  | { kind: 'paused' }
  /** Fewer credits than tasks: the next frees at `nextFreeMs` (null: unknown). */
  | { kind: 'rate'; nextFreeMs: number | null };

/**
 * A claim the gate asks for: tasks of one line, in due order, under the
 * limits in force. They run one after another in one transaction, which
 * holds one concurrency slot and a rate credit for each start.
 */
export interface GateClaim {
  line: Line;
  items: GateItem[];
  /** The handler's declared limits: the claim's SQL prefers a run-time override. */
  declared: ResolvedLimit;
  /** In force as this instance knows them (the rate decides whether a credit is taken). */
  effective: ResolvedLimit;
}

/**
 * Where tasks of limited or paused types wait (docs/limits.md). A claim of
 * fired tasks hands them over unclaimed; here they wait in lines, one per
 * type and key, in due order, charged nothing and holding no connection.
 * A line starts its head when its limits let it: a local slot is free (its
 * claims here fewer than the concurrency), no rate credit is due later, the
 * type is not paused. The claim itself decides, in the database, across
 * instances; when it says "busy" (slots held elsewhere) the line waits with
 * a backoff and looks at the slots in one statement for all such lines
 * before trying again; a rate limit's line sleeps until its next credit
 * frees; a paused line waits for the book to say resumed. A line wakes at
 * once when one of its own claims here ends. Nothing spins: while tasks
 * wait, the cost is one read of the limits a second, plus one look at busy
 * slots per backoff.
 */
export class LimitGate implements LifecycleService {
  readonly book: LimitBook;
  private readonly lines = new Map<string, Line>();
  private timer: TimerHandle | undefined;
  private timerAtMs = Infinity;
  private readonly refresh: PeriodicRound;
  private looking = false;
  private readOnce = false;
  private turns = 0;
  /** Ids waiting in a line or in a claim of the gate. */
  private readonly waitingIds = new Set<TaskId>();
  private stopped = false;

  constructor(
    private readonly ctx: DelayContext,
    private readonly registry: HandlerRegistry,
    /** The dispatcher: asked to take ready lines' heads when it has room. */
    private readonly wake: () => void,
    /** Hands tasks of a type no longer limited back to the dispatcher's queue. */
    private readonly release: (ids: TaskId[]) => void,
  ) {
    this.book = new LimitBook((type) => registry.limitOf(type)?.limit);
    this.refresh = new PeriodicRound(
      ctx.clock,
      LIMIT_REFRESH_MS,
      () => this.readBook(),
      (error) => ctx.logger.error(`Reading the task types' limits failed: ${errorText(error)}`),
    );
  }

  async start(): Promise<void> {
    await this.readBook();
    this.refresh.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = undefined;
    await this.refresh.stop();
    this.lines.clear();
    this.waitingIds.clear();
  }

  /** Tasks waiting here, by type. */
  waitingByType(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const line of this.lines.values())
      counts.set(line.type, (counts.get(line.type) ?? 0) + line.waiting.length);
    return counts;
  }

  get size(): number {
    let size = 0;
    for (const line of this.lines.values()) size += line.waiting.length;
    return size;
  }

  /** Something could start now (the dispatcher's settle and pump ask). */
  get hasReady(): boolean {
    const nowMs = this.ctx.clock.now();
    for (const line of this.lines.values()) if (this.ready(line, nowMs)) return true;
    return false;
  }

  /** Types declared limited here: a claim of fired tasks hands theirs over. */
  declaredTypes(): string[] {
    return this.registry.limitedTypes();
  }

  /** Tasks a claim handed over: each joins its line. */
  add(rows: GatedRow[]): void {
    if (this.stopped) return;
    const nowMs = this.ctx.clock.now();
    for (const row of rows) {
      // Already waiting here (fired again meanwhile): once is enough.
      if (this.waitingIds.has(row.id)) continue;
      this.waitingIds.add(row.id);
      const line = this.lineOf(row.type, this.keyOf(row));
      insertInDueOrder(line.waiting, {
        id: row.id,
        dueAtMs: row.dueAtMs,
        sinceMs: Math.max(nowMs, row.dueAtMs),
        alone: false,
      });
    }
    this.wake();
  }

  /**
   * The next claim to run, or undefined. `canRunAlone`: no other claim is
   * in flight, so a task that must run alone may go.
   */
  next(canRunAlone: boolean): GateClaim | undefined {
    const nowMs = this.ctx.clock.now();
    let best: Line | undefined;
    for (const line of this.lines.values()) {
      if (!this.ready(line, nowMs)) continue;
      if (line.waiting[0].alone && !canRunAlone) continue;
      if (
        !best ||
        line.waiting[0].dueAtMs < best.waiting[0].dueAtMs ||
        (line.waiting[0].dueAtMs === best.waiting[0].dueAtMs && line.turn < best.turn)
      )
        best = line;
    }
    if (!best) return undefined;
    const limits = this.book.of(best.type);
    const items = this.take(best, limits.effective.concurrency);
    best.running++;
    best.turn = ++this.turns;
    if (limits.effective.rate) best.takingCredit = true;
    return { line: best, items, declared: limits.declared, effective: limits.effective };
  }

  /**
   * A claim's share of its line: a task that must run alone by itself, else
   * the line spread over the slots it may still use here, up to a batch.
   */
  private take(line: Line, concurrency: number | null): GateItem[] {
    if (line.waiting[0].alone) return [line.waiting.shift()!];
    const free = Math.max(1, (concurrency ?? GATE_SPREAD) - line.running);
    const size = Math.min(
      this.ctx.options.batchSize,
      Math.max(1, Math.ceil(line.waiting.length / free)),
    );
    let n = 0;
    while (n < size && n < line.waiting.length && !line.waiting[n].alone) n++;
    return line.waiting.splice(0, n);
  }

  /** Its claim has its rate credit (or found none): the line's next may ask for one. */
  creditTaken(claim: GateClaim): void {
    if (!claim.line.takingCredit) return;
    claim.line.takingCredit = false;
    this.wake();
  }

  /**
   * What the claim of `claim` came to: `back` are its tasks that did not
   * run (in its line again, in due order); the line moves on or waits.
   */
  ended(claim: GateClaim, outcome: GateOutcome, back: GateItem[] = []): void {
    const { line } = claim;
    line.running--;
    line.takingCredit = false;
    const nowMs = this.ctx.clock.now();
    const returned = new Set(back.map((item) => item.id));
    for (const item of claim.items) if (!returned.has(item.id)) this.waitingIds.delete(item.id);
    for (const item of back) insertInDueOrder(line.waiting, item);
    // One of its claims here ended: its slot is free, whoever was kept waiting tries now.
    if (outcome.kind !== 'busy' && line.blocked === 'busy') {
      line.blocked = null;
      line.readyAtMs = 0;
    }
    switch (outcome.kind) {
      case 'ran':
        line.blocked = null;
        line.backoffMs = 0;
        break;
      case 'done':
        break;
      case 'paused':
        this.book.apply({ type: line.type, paused_at: new Date(nowMs) });
        break;
      case 'busy':
        // Held elsewhere: look again after a backoff, or when a claim of its own here ends.
        this.backOff(line, nowMs, 'busy');
        break;
      case 'rate': {
        const atMs = outcome.nextFreeMs;
        // All in flight (stamped once their starts happen), or due already by
        // this clock but not yet by the database's, which may be a moment ahead.
        if (atMs === null || !Number.isFinite(atMs) || atMs <= nowMs)
          this.backOff(line, nowMs, 'rate');
        else {
          line.blocked = 'rate';
          line.readyAtMs = Math.ceil(atMs);
        }
        break;
      }
    }
    if (line.waiting.length === 0 && line.running === 0)
      this.lines.delete(lineId(line.type, line.key));
    this.arm();
    this.wake();
  }

  /** A pause or resume, or a change of limits, made here: the lines follow at once. */
  changed(type: string, row: Parameters<LimitBook['apply']>[0]): void {
    this.book.apply(row);
    for (const line of this.lines.values()) {
      if (line.type !== type) continue;
      line.readyAtMs = 0;
      line.blocked = null;
      line.backoffMs = 0;
    }
    this.releaseUngated();
    this.wake();
  }

  private ready(line: Line, nowMs: number): boolean {
    if (line.waiting.length === 0 || line.readyAtMs > nowMs || line.blocked === 'busy')
      return false;
    if (line.takingCredit) return false;
    const limits = this.book.of(line.type);
    if (limits.pausedAt !== null) return false;
    const { concurrency } = limits.effective;
    return concurrency === null || line.running < concurrency;
  }

  private backOff(line: Line, nowMs: number, blocked: 'busy' | 'rate'): void {
    line.backoffMs = Math.min(
      LIMIT_BUSY_MAX_RETRY_MS,
      line.backoffMs === 0 ? LIMIT_BUSY_FIRST_RETRY_MS : line.backoffMs * 2,
    );
    line.blocked = blocked;
    line.readyAtMs = nowMs + line.backoffMs;
  }

  /** One timer for the earliest line to become ready. */
  private arm(): void {
    if (this.stopped) return;
    let atMs = Infinity;
    for (const line of this.lines.values())
      if (line.waiting.length > 0 && line.blocked !== null) atMs = Math.min(atMs, line.readyAtMs);
    if (atMs >= this.timerAtMs) return;
    this.timer?.cancel();
    this.timerAtMs = atMs;
    if (atMs === Infinity) return;
    this.timer = this.ctx.clock.setTimer(atMs, () => {
      this.timer = undefined;
      this.timerAtMs = Infinity;
      void this.lookAgain();
    });
  }

  /**
   * Lines whose wait is over: a rate line tries again; lines blocked by
   * slots held elsewhere first look, all in one statement, and only those
   * with a slot free try; the others wait twice as long.
   */
  private async lookAgain(): Promise<void> {
    if (this.looking || this.stopped) return;
    this.looking = true;
    try {
      const nowMs = this.ctx.clock.now();
      const busy: Line[] = [];
      for (const line of this.lines.values()) {
        if (line.blocked === null || line.readyAtMs > nowMs) continue;
        if (line.blocked === 'rate') line.blocked = null;
        else busy.push(line);
      }
      if (busy.length > 0) {
        const lines = busy.map((line) => ({
          type: line.type,
          key: line.key,
          slots: this.book.of(line.type).effective.concurrency ?? 1,
        }));
        const free = await freeSlots(this.ctx.db.pool, lines).catch((error: unknown) => {
          this.ctx.logger.error(`Looking at limits' slots failed: ${errorText(error)}`);
          return lines.map(() => false);
        });
        const afterMs = this.ctx.clock.now();
        busy.forEach((line, i) => {
          if (free[i]) line.blocked = null;
          else this.backOff(line, afterMs, 'busy');
        });
      }
    } finally {
      this.looking = false;
    }
    this.arm();
    this.wake();
  }

  /** The limits as stored, read every second while anything waits here. */
  private async readBook(): Promise<void> {
    // Nothing waits (past the first read): the claims read the table themselves.
    if (this.stopped || (this.lines.size === 0 && this.readOnce)) return;
    this.readOnce = true;
    this.book.replace(await readTypeLimits(this.ctx.db.pool));
    this.releaseUngated();
    this.wake();
  }

  /** Lines of types that no longer gate (resumed, limits removed) go back to the queue. */
  private releaseUngated(): void {
    for (const [id, line] of this.lines) {
      if (this.book.gates(line.type) || line.waiting.length === 0) continue;
      const ids = line.waiting.splice(0).map((item) => item.id);
      for (const id of ids) this.waitingIds.delete(id);
      if (line.running === 0) this.lines.delete(id);
      this.release(ids);
    }
  }

  private keyOf(row: GatedRow): string {
    const keyFn = this.registry.limitOf(row.type)?.key;
    const key = limitKeyOf(keyFn, row.payload);
    if (typeof key === 'string') return key;
    this.ctx.logger.error(
      `Task ${row.id} (${row.type}): ${key.message}; it waits under the type's empty key ''`,
    );
    return '';
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
        turn: 0,
        takingCredit: false,
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
