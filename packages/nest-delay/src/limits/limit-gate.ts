import type { TimerHandle } from '../clock/index.js';
import { errorText } from '../delay.messages.js';
import type { HandlerRegistry } from '../handler-registry.js';
import type { DueRow } from '../tasks/task-row.js';
import type { TaskId } from '../task.types.js';
import type { DelayContext, LifecycleService } from '../context/delay-context.js';
import { PeriodicRound } from '../context/periodic-round.js';
import {
  GATE_CAPACITY_MIN,
  GATE_CAPACITY_PAGES,
  GATE_SPREAD,
  LIMIT_BUSY_FIRST_RETRY_MS,
  LIMIT_BUSY_MAX_RETRY_MS,
  LIMIT_REFRESH_MS,
} from '../context/tuning.js';
import { GateLines, LimitBook } from './gate-lines.js';
import type { GateClaim, GateItem, GateOutcome } from './gate-line.types.js';
import { declareLimits, findFired, findWaiting, readTypeLimits } from './limit-statements.js';
import { limitKeyOf, NO_LIMIT } from '../task-limit.js';

export type { GateClaim, GateItem, GateOutcome } from './gate-line.types.js';

/** A due task of a gated type, for its line. */
interface GatedRow {
  id: TaskId;
  type: string;
  payload: unknown;
  dueAtMs: number;
}

/**
 * Where fired tasks of limited or paused types wait (docs/limits.md), in
 * lines per type and key (GateLines), holding no connection, until a claim
 * of the gate's takes them; that claim decides, in the database. A line
 * refused waits: for its next credit, a backoff (seats held elsewhere), or
 * a resume. At most `capacity` tasks are held: the rest stay in the table
 * and are read back by type once there is room (refill).
 */
export class LimitGate implements LifecycleService {
  readonly book: LimitBook;
  private readonly lines: GateLines;
  private timer: TimerHandle | undefined;
  private timerAtMs = Infinity;
  private readonly refresh: PeriodicRound;
  private readingBook = 0;
  /** When the book was last read (-Infinity: never). */
  private readAtMs = -Infinity;
  /** Types with tasks shed, and how far a refill has read them back (null: from the first). */
  private readonly shed = new Map<string, DueRow | null>();
  private refilling = false;
  /** Counts sheds: a refill that read while tasks were shed keeps reading from the first. */
  private sheds = 0;
  /** Fired ids being read (take) before they join their lines. */
  private readonly reading = new Set<TaskId>();
  private stopped = false;

  constructor(
    private readonly ctx: DelayContext,
    private readonly registry: HandlerRegistry,
    private readonly wake: () => void,
    /** To the dispatcher's queue (a type no longer gated). */
    private readonly release: (ids: TaskId[]) => void,
    /** Ids in the dispatcher's queue: a refill fills the room left by both. */
    private readonly queued: () => number,
  ) {
    this.book = new LimitBook((type) => registry.limitOf(type)?.limit);
    const page = ctx.options.batchSize * ctx.concurrency;
    this.lines = new GateLines((type) => this.book.of(type), {
      batchSize: ctx.options.batchSize,
      spread: GATE_SPREAD,
      capacity: Math.max(GATE_CAPACITY_MIN, GATE_CAPACITY_PAGES * page),
      firstBackoffMs: LIMIT_BUSY_FIRST_RETRY_MS,
      maxBackoffMs: LIMIT_BUSY_MAX_RETRY_MS,
    });
    this.refresh = new PeriodicRound(
      ctx.clock,
      LIMIT_REFRESH_MS,
      () => this.readBook(false),
      (error) => ctx.logger.error(`Reading the task types' limits failed: ${errorText(error)}`),
    );
  }

  async start(): Promise<void> {
    const { registry } = this;
    await declareLimits(
      this.ctx.db.pool,
      registry.types().map((type) => {
        const declared = registry.limitOf(type);
        return {
          type,
          limit: declared?.limit ?? NO_LIMIT,
          perKey: declared?.key !== undefined,
        };
      }),
      this.ctx.options.instanceId,
      new Date(this.ctx.clock.now()),
    );
    await this.readBook(true);
    this.refresh.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = undefined;
    await this.refresh.stop();
    this.lines.clear();
    this.shed.clear();
  }

  /** For DelayTester.reset (which deleted the tasks and run-time limits): forget all, read the limits. */
  async forget(): Promise<void> {
    this.timer?.cancel();
    this.timer = undefined;
    this.timerAtMs = Infinity;
    this.lines.clear();
    this.shed.clear();
    await this.readBook(true);
  }

  /** Waiting here or in a claim of the gate; or of a type with tasks shed, which refill reads back. */
  accounts(id: TaskId, type: string): boolean {
    return this.lines.has(id) || this.reading.has(id) || this.shed.has(type);
  }

  /** Tasks waiting here, by type. */
  waitingByType(): Map<string, number> {
    return this.lines.waitingByType();
  }

  /** Tasks waiting here (at most `capacity`). */
  get size(): number {
    return this.lines.size;
  }

  get capacity(): number {
    return this.lines.capacity;
  }

  /** Tasks that may start now: the dispatcher counts them with its queue for back-pressure. */
  get readySize(): number {
    return this.lines.readySize(this.ctx.clock.now()) + this.reading.size;
  }

  /** A read under way (limits, shed tasks) may make a line ready: settle waits for it. */
  get busy(): boolean {
    return this.refilling || this.readingBook > 0 || this.reading.size > 0;
  }

  /** Something could start now (the dispatcher's settle and pump ask). */
  get hasReady(): boolean {
    return this.lines.hasReady(this.ctx.clock.now());
  }

  /** Fired tasks of this type come here: it is limited or paused, as the book says. */
  gates(type: string): boolean {
    return this.book.gates(type);
  }

  /**
   * Fired tasks of gated types, or that a plain claim found gated (`stale`:
   * read the book again). One plain read (findFired) lines them; if it
   * fails they go to the claim queue, whose claim sends them back here.
   */
  take(ids: TaskId[], stale = false): void {
    if (this.stopped) return;
    for (const id of ids) this.reading.add(id);
    const { ctx } = this;
    void Promise.all([
      findFired(ctx.db.pool, ids, this.registry.keyedTypes()),
      stale ? this.readBook(true) : undefined,
    ])
      // No longer reading before they join their lines: the room a reader waits for counts both.
      .finally(() => ids.forEach((id) => this.reading.delete(id)))
      .then(
        ([rows]) => this.add(rows.map((row) => ({ ...row, dueAtMs: row.due_at.getTime() }))),
        (error: unknown) => {
          ctx.logger.error(`Reading fired tasks of limited types failed: ${errorText(error)}`);
          this.release(ids);
        },
      );
  }

  /** Tasks for their lines (fired, or read back): each joins its line, or is shed when the gate is full. */
  add(rows: GatedRow[]): void {
    if (this.stopped) return;
    const nowMs = this.ctx.clock.now();
    // Idle until now, the book may be old: read it before these lines ask (the claim checks anyway).
    if (this.lines.size === 0 && nowMs - this.readAtMs >= LIMIT_REFRESH_MS)
      void this.readBook(true).catch(() => undefined);
    for (const row of rows) {
      const added = this.lines.add(
        { id: row.id, type: row.type, key: this.keyOf(row), dueAtMs: row.dueAtMs },
        nowMs,
      );
      if (added === 'shed') {
        this.shed.set(row.type, null);
        this.sheds++;
      }
    }
    this.wake();
  }

  /**
   * The next claim to run, or undefined. `canRunAlone`: no other claim is
   * in flight, so a task that must run alone may go.
   */
  next(canRunAlone: boolean): GateClaim | undefined {
    return this.lines.next(this.ctx.clock.now(), canRunAlone);
  }

  /** Its claim has its rate credit (or found none): the line's next may ask for one. */
  creditTaken(claim: GateClaim): void {
    if (this.lines.creditTaken(claim)) this.wake();
  }

  /** A rate credit of a line was stamped, or put back (`returned`): a line waiting on it may ask now. */
  creditSettled(type: string, key: string, returned: boolean): void {
    if (!this.lines.creditSettled(type, key, returned)) return;
    this.arm();
    this.wake();
  }

  /** What `claim` came to; `back`: its tasks that did not run, in their line again. */
  ended(claim: GateClaim, outcome: GateOutcome, back: GateItem[] = []): void {
    const nowMs = this.ctx.clock.now();
    if (outcome.kind === 'paused')
      this.book.apply({ type: claim.line.type, paused_at: new Date(nowMs) });
    // The database knows limits this picture lacks: read them before the line asks again.
    if (outcome.kind === 'stale') void this.readBook(true).catch(() => undefined);
    this.lines.ended(claim, outcome, back, nowMs);
    this.arm();
    this.refill();
    this.wake();
  }

  /** A claim ended and the dispatcher's queue shrank: shed tasks may come back. */
  roomFreed(): void {
    this.refill();
  }

  /** A pause or resume, or a change of limits, made here: the lines follow at once. */
  changed(type: string, row: Parameters<LimitBook['apply']>[0]): void {
    this.book.apply(row);
    this.lines.retryType(type);
    this.releaseUngated();
    this.wake();
  }

  /** When the next rate credit a waiting line waits for frees, as far as it knows (Infinity: none). */
  nextCreditMs(): number {
    return this.lines.nextWakeMs(true);
  }

  /** One timer for the earliest line to become ready. */
  private arm(): void {
    if (this.stopped) return;
    const atMs = this.lines.nextWakeMs();
    if (atMs >= this.timerAtMs) return;
    this.timer?.cancel();
    this.timerAtMs = atMs;
    if (atMs === Infinity) return;
    this.timer = this.ctx.clock.setTimer(atMs, () => {
      this.timer = undefined;
      this.timerAtMs = Infinity;
      this.lines.wakeDue(this.ctx.clock.now());
      this.arm();
      this.wake();
    });
  }

  /** The limits as stored: read every second while anything waits here, or when asked (`force`). */
  private async readBook(force: boolean): Promise<void> {
    // Nothing waits: the claims read the table themselves, and the first task to come reads it again.
    if (this.stopped || (!force && this.lines.size === 0 && this.shed.size === 0)) return;
    this.readAtMs = this.ctx.clock.now();
    this.readingBook++;
    try {
      this.book.replace(await readTypeLimits(this.ctx.db.pool));
    } finally {
      this.readingBook--;
    }
    this.releaseUngated();
    this.refill();
    this.wake();
  }

  /** Lines of types that no longer gate (resumed, limits removed) go back to the queue. */
  private releaseUngated(): void {
    const ids = this.lines.takeUngated((type) => this.book.gates(type));
    if (ids.length > 0) this.release(ids);
    this.refill();
  }

  /**
   * Once the gate and the queue are at most half full, the next page of one
   * shed, unpaused type is read back in due order (findWaiting): to its
   * lines while the type gates, else to the queue.
   */
  private refill(): void {
    if (this.refilling || this.stopped || this.shed.size === 0) return;
    const held = this.lines.size + this.queued();
    if (held > this.capacity / 2) return;
    const room = this.capacity - held;
    const type = [...this.shed.keys()].find((t) => this.book.of(t).pausedAt === null);
    if (type === undefined) return;
    const after = this.shed.get(type) ?? null;
    const sheds = this.sheds;
    this.refilling = true;
    const { ctx } = this;
    void findWaiting(
      ctx.db.pool,
      type,
      ctx.options.instanceId,
      new Date(ctx.clock.now()),
      after,
      room,
      this.registry.limitOf(type)?.key !== undefined,
    )
      .then((rows) => {
        // Shed again meanwhile: read from the first next time.
        if (this.sheds === sheds) {
          if (rows.length < room) this.shed.delete(type);
          else this.shed.set(type, rows[rows.length - 1]);
        }
        if (rows.length === 0) return;
        if (this.stopped || !this.book.gates(type)) {
          this.release(rows.map((row) => row.id));
          return;
        }
        this.add(
          rows.map((row) => ({
            id: row.id,
            type,
            payload: row.payload,
            dueAtMs: row.due_at.getTime(),
          })),
        );
      })
      .catch((error: unknown) =>
        ctx.logger.error(`Reading back the waiting tasks of ${type} failed: ${errorText(error)}`),
      )
      .finally(() => {
        this.refilling = false;
      });
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
}
