import type { TaskId } from '../task.types.js';

/**
 * Fired ids waiting for a claim, in the order they fired (due order), and the
 * size of the next batch. Two lines: most ids wait in `waiting`; a task that
 * may only run alone (its last attempt was cut off) waits in `alone`, for a
 * claim of its own with no other claim in flight, ahead of the rest.
 */
export class ClaimQueue {
  private waiting: TaskId[] = [];
  private head = 0;
  private readonly queued = new Set<TaskId>();
  private alone: TaskId[] = [];
  /**
   * Ids in a claim under way. Not queued again meanwhile: a second claim of
   * one could not lock it anyway, but its note would list it, and if the
   * process died then, the task would be charged twice for one death.
   */
  private readonly inClaim = new Set<TaskId>();
  /**
   * Ids added again while in a claim: queued once that claim ends. The claim
   * may have looked at the row before what fired it again (a caller's commit,
   * a recheck's hold), so it is not trusted to account for it.
   */
  private readonly again = new Set<TaskId>();
  /** Batches taken since the queue was last idle: the ramp of batch sizes (see takeBatch). */
  private takenSinceIdle = 0;

  /** Ids waiting for a claim. */
  get size(): number {
    return this.waiting.length - this.head + this.alone.length;
  }

  get hasAlone(): boolean {
    return this.alone.length > 0;
  }

  get hasWaiting(): boolean {
    return this.waiting.length > this.head;
  }

  /** Queues ids not already waiting or in a claim. */
  add(ids: Iterable<TaskId>): void {
    for (const id of ids) {
      if (this.queued.has(id)) continue;
      if (this.inClaim.has(id)) {
        this.again.add(id);
        continue;
      }
      this.queued.add(id);
      this.waiting.push(id);
    }
  }

  addAlone(id: TaskId): void {
    this.alone.push(id);
  }

  /**
   * The next batch: a small queue is spread over the free `workers`, a large one
   * capped at `batchSize`. A burst (more than a full batch for every worker)
   * starts from idle at one task a batch and doubles (1, 2, 4, ...): its
   * first task commits after a handful of round trips, not after batchSize
   * effects interleaved with every other worker's.
   */
  takeBatch(batchSize: number, workers: number): TaskId[] {
    const waiting = this.waiting.length - this.head;
    const ramp = waiting > workers * batchSize ? 2 ** Math.min(this.takenSinceIdle, 30) : batchSize;
    this.takenSinceIdle++;
    const size = Math.min(batchSize, ramp, Math.max(1, Math.ceil(waiting / workers)));
    const batch = this.waiting.slice(this.head, this.head + size);
    this.head += batch.length;
    if (this.head > 4096 && this.head * 2 > this.waiting.length) {
      this.waiting = this.waiting.slice(this.head);
      this.head = 0;
    }
    for (const id of batch) this.queued.delete(id);
    return this.claiming(batch);
  }

  takeAlone(): TaskId[] {
    return this.claiming([this.alone.shift() as TaskId]);
  }

  /** Their claim is over: they may be queued again, and those added meanwhile are. */
  claimEnded(ids: TaskId[]): void {
    const again: TaskId[] = [];
    for (const id of ids) {
      if (!this.inClaim.delete(id)) continue;
      if (this.again.delete(id)) again.push(id);
    }
    this.add(again);
  }

  /** Waiting for a claim, or in one: accounted for (the safety net asks). */
  has(id: TaskId): boolean {
    return this.queued.has(id) || this.inClaim.has(id) || this.alone.includes(id);
  }

  /** Nothing waits and no claim runs: the next burst ramps up from one again. */
  idle(): void {
    this.takenSinceIdle = 0;
  }

  clear(): void {
    this.waiting = [];
    this.head = 0;
    this.alone = [];
    this.queued.clear();
    this.again.clear();
  }

  private claiming(ids: TaskId[]): TaskId[] {
    for (const id of ids) this.inClaim.add(id);
    return ids;
  }
}
