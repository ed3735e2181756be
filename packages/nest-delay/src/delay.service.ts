import { Injectable } from '@nestjs/common';
import { DelayRuntime } from './delay.runtime.js';
import { DelayValidationError } from './errors/delay-validation.error.js';
import { TaskNotFoundError } from './errors/task-not-found.error.js';
import { UnknownTaskTypeError } from './errors/unknown-task-type.error.js';
import { HandlerRegistry } from './handler-registry.js';
import { normalizeScheduleRequest, type NormalizedRequest } from './schedule-request.js';
import { parseTaskRef } from './task-ref.js';
import { toTask, type TaskRow } from './task-row.js';
import type {
  DelayedTask,
  JsonValue,
  ScheduleRequest,
  TaskRef,
  TransactionOptions,
} from './task.types.js';
import type { Duration } from './duration.js';

const MAX_KEY_RACE_RETRIES = 5;

/**
 * Schedule work to run later, durably: `schedule({ type, payload, delay: '48h' })`.
 * Every call validates first and writes nothing when it throws. Pass
 * `{ manager }` to make the write part of your own transaction.
 */
@Injectable()
export class DelayService {
  constructor(
    private readonly runtime: DelayRuntime,
    private readonly registry: HandlerRegistry,
  ) {}

  async schedule<P = JsonValue>(
    request: ScheduleRequest<P>,
    options: TransactionOptions = {},
  ): Promise<DelayedTask<P>> {
    const req = this.validate(request);
    const { manager } = options;
    const store = this.runtime.store;
    for (let attempt = 0; attempt < MAX_KEY_RACE_RETRIES; attempt++) {
      const now = new Date(this.runtime.clock.now());
      const lockedBy = this.leaseFor(req.dueAtMs, manager !== undefined);
      let row: TaskRow | undefined;
      if (req.key !== null && req.ifExists === 'replace') {
        row = await store.replaceByKey(req, lockedBy, now, manager);
      }
      row ??= await store.insert(req, lockedBy, now, manager);
      if (!row && req.key !== null && req.ifExists === 'keep') {
        const existing = await store.pendingByKey(req.key, manager);
        if (existing) return toTask<P>(existing);
      }
      // No row: the pending task holding the key finished in between; go again.
      if (!row) continue;
      this.track(row, manager !== undefined);
      return toTask<P>(row);
    }
    throw new Error(
      `schedule: key ${JSON.stringify(req.key)} kept changing hands; gave up after ${MAX_KEY_RACE_RETRIES} tries`,
    );
  }

  /**
   * Many tasks in one INSERT (for imports and bursts). A key that is already
   * pending keeps its task and is left out of the result.
   */
  async scheduleMany(
    requests: ScheduleRequest[],
    options: TransactionOptions = {},
  ): Promise<Array<{ id: string; key: string | null; dueAt: Date }>> {
    if (!Array.isArray(requests)) throw new DelayValidationError('requests', 'must be an array');
    const reqs = requests.map((r, i) => {
      try {
        return this.validate(r);
      } catch (error) {
        if (error instanceof DelayValidationError)
          throw new DelayValidationError(
            `requests[${i}].${error.field}`,
            error.message.slice(error.field.length + 1),
          );
        throw error;
      }
    });
    if (reqs.length === 0) return [];
    const nowMs = this.runtime.clock.now();
    const lockedBy =
      options.manager || !this.runtime.running ? null : this.runtime.options.instanceId;
    const rows = await this.runtime.store.insertMany(
      reqs,
      lockedBy,
      new Date(nowMs),
      new Date(nowMs + this.runtime.options.windowMs),
      options.manager,
    );
    for (const row of rows)
      this.holdNew(Number(row.id), row.due_at.getTime(), options.manager !== undefined);
    return rows.map((row) => ({ id: String(row.id), key: row.key, dueAt: row.due_at }));
  }

  /** Cancels a pending task by id or key; false when there was none (already ran, cancelled, unknown). */
  async cancel(idOrKey: TaskRef, options: TransactionOptions = {}): Promise<boolean> {
    const ref = parseTaskRef(idOrKey);
    const row = await this.runtime.store.cancel(
      ref,
      new Date(this.runtime.clock.now()),
      options.manager,
    );
    // Inside a caller's transaction the cancel may roll back: leave the wheel
    // alone, the claim will find the task cancelled (or not) when it fires.
    if (row && !options.manager) this.runtime.release(Number(row.id));
    return row !== undefined;
  }

  /** Moves a pending task to a new time. Throws TaskNotFoundError when no pending task matches. */
  async reschedule(
    idOrKey: TaskRef,
    when: { delay: Duration } | { runAt: Date | string | number },
    options: TransactionOptions = {},
  ): Promise<DelayedTask> {
    const ref = parseTaskRef(idOrKey);
    const nowMs = this.runtime.clock.now();
    const { dueAtMs } = normalizeScheduleRequest({ type: 'reschedule', ...when }, nowMs, {
      maxAttempts: 1,
    });
    const lockedBy = this.leaseFor(dueAtMs, options.manager !== undefined);
    const row = await this.runtime.store.reschedule(
      ref,
      new Date(dueAtMs),
      new Date(nowMs),
      lockedBy,
      options.manager,
    );
    if (!row) throw new TaskNotFoundError(idOrKey);
    this.track(row, options.manager !== undefined);
    return toTask(row);
  }

  /** The task with this id, or the pending (else latest) task with this key; undefined if none. */
  async get<P = JsonValue>(
    idOrKey: TaskRef,
    options: TransactionOptions = {},
  ): Promise<DelayedTask<P> | undefined> {
    const row = await this.runtime.store.get(parseTaskRef(idOrKey), options.manager);
    return row ? toTask<P>(row) : undefined;
  }

  /** Puts a dead-lettered task back to pending, due now, with fresh attempts. */
  async retry(idOrKey: TaskRef): Promise<DelayedTask> {
    const ref = parseTaskRef(idOrKey);
    const row = await this.runtime.store.retryDead(
      ref,
      new Date(this.runtime.clock.now()),
      this.runtime.running ? this.runtime.options.instanceId : null,
    );
    if (!row) throw new TaskNotFoundError(idOrKey);
    this.track(row, false);
    return toTask(row);
  }

  /** Resolves when every task due by the clock's current time has run (see DelayRuntime.drain). */
  drain(timeoutMs?: number): Promise<void> {
    return this.runtime.drain(timeoutMs);
  }

  /** Counters of this instance: executed, failed, dead-lettered, held in the wheel, queued. */
  stats() {
    return this.runtime.stats;
  }

  private validate(request: ScheduleRequest<unknown>): NormalizedRequest {
    const req = normalizeScheduleRequest(request, this.runtime.clock.now(), {
      maxAttempts: this.runtime.options.maxAttempts,
    });
    if (!this.runtime.options.allowUnknownTypes && !this.registry.has(req.type)) {
      throw new UnknownTaskTypeError(req.type, this.registry.types());
    }
    return req;
  }

  /**
   * Written outside a caller's transaction, a task due within the window is
   * leased to this instance right away. Inside one it stays unleased, so that
   * if it commits after it falls due the loader still finds it.
   */
  private leaseFor(dueAtMs: number, inCallerTransaction: boolean): string | null {
    // Before start or while shutting down this instance's wheel will not run
    // the task: leave it unleased, for the loader of whichever instance runs.
    if (inCallerTransaction || !this.runtime.running) return null;
    return dueAtMs < this.runtime.clock.now() + this.runtime.options.windowMs
      ? this.runtime.options.instanceId
      : null;
  }

  private track(row: TaskRow, inCallerTransaction: boolean): void {
    if (row.executed_at || row.cancelled_at || row.dead_at) return;
    this.holdNew(Number(row.id), row.due_at.getTime(), inCallerTransaction);
  }

  private holdNew(id: number, dueAtMs: number, inCallerTransaction: boolean): void {
    if (inCallerTransaction) this.runtime.holdAtLeastAsEarly(id, dueAtMs);
    else this.runtime.hold(id, dueAtMs);
  }
}
