import { Injectable } from '@nestjs/common';
import { DelayValidationError } from './errors/delay-errors.js';
import { HandlerRegistry } from './handler-registry.js';
import { DelayRuntime } from './runtime/delay.runtime.js';
import { followBulkWrite, followCancel, followWrite } from './firing/task-wheel.js';
import { dueAtOf, normalizeRegistered, type NormalizedRequest } from './tasks/schedule-request.js';
import {
  insertTasks,
  insertUnkeyedTask,
  insertUnkeyedTasks,
  newTaskRow,
  bulkResults,
  unkeyedBulkRows,
} from './tasks/insert-statements.js';
import { getTask } from './tasks/task-statements.js';
import {
  actedRow,
  cancelTask,
  insertTask,
  rescheduleTask,
  reviveTask,
} from './tasks/action-statements.js';
import { toTask, type TaskRow } from './tasks/task-row.js';
import {
  cancel,
  cancelEntity,
  keyAction,
  reschedule,
  rescheduleEntity,
  revive,
  type MoveAction,
} from './tasks/task-transitions.js';
import { checkEntityMove, checkEntityScope } from './tasks/entity-request.js';
import {
  cancelEntityTasks,
  entityResult,
  rescheduleEntityTasks,
} from './tasks/entity-statements.js';
import { checkTaskRef } from './task-ref.js';
import { statsSnapshot, type DelayStats } from './delay-stats.js';
import { callerTransaction, type CallerTransaction } from './store/caller-transaction.js';
import type {
  BulkScheduleResult,
  DelayedTask,
  EntityActionOptions,
  EntityActionResult,
  EntityMoveRequest,
  JsonValue,
  RunAt,
  ScheduleRequest,
  TaskRef,
  TransactionOptions,
} from './task.types.js';

/**
 * Schedule work to run later, durably: `schedule({ type, payload, delay: '48h' })`.
 * Every call validates first and writes nothing when it throws. Every write
 * takes `{ manager }` (TypeORM) or `{ transaction }` (any other, see
 * docs/bindings.md) to be part of your own transaction. Tasks are named by
 * `{ id }` or `{ key }`; a read of a task that does not exist returns
 * undefined, an action on one throws TaskNotFoundError, and an action that
 * does not fit the task's state throws TaskStateError naming the state.
 */
@Injectable()
export class DelayService {
  constructor(
    private readonly runtime: DelayRuntime,
    private readonly registry: HandlerRegistry,
  ) {}

  /**
   * One task. With a `key` that a pending task already holds, `ifExists`
   * decides: `keep` (default) returns that task unchanged, `replace` moves it
   * to this request, `debounce` moves it to this request but never later
   * than `maxWait` after its first request. Each one statement, whatever
   * races it (several instances included): one pending task per key.
   */
  async schedule<P = JsonValue>(
    request: ScheduleRequest<P>,
    options: TransactionOptions = {},
  ): Promise<DelayedTask<P>> {
    const req = this.normalize(request);
    const caller = this.caller(options);
    const nowMs = this.now();
    const inCaller = caller !== undefined;
    const lockedBy = this.policy.leaseOnWrite(req.dueAtMs, nowMs, inCaller, req.type);
    const now = new Date(nowMs);
    const sql = this.db.in(caller);
    const traceContext = this.runtime.ctx.tracing?.capture() ?? null;
    const row =
      req.key === null
        ? newTaskRow(
            await this.leasing(caller, insertUnkeyedTask(sql, req, lockedBy, now, traceContext)),
            req,
            lockedBy,
            now,
          )
        : await this.leasing(
            caller,
            insertTask(
              sql,
              req,
              lockedBy,
              keyAction(req, nowMs, this.policy, inCaller),
              now,
              traceContext,
            ),
          );
    this.track(row, caller);
    if (row.inserted) this.tell('onScheduled', [row], caller);
    return toTask<P>(row);
  }

  /**
   * Many tasks in one INSERT (imports, bursts). One result per request, in
   * order: `scheduled` with its id, or `duplicate` with the id of the pending
   * task that already holds its key (in the table, or earlier in this call).
   */
  async scheduleMany(
    requests: ScheduleRequest[],
    options: TransactionOptions = {},
  ): Promise<BulkScheduleResult[]> {
    if (!Array.isArray(requests)) throw new DelayValidationError('requests', 'must be an array');
    const reqs = requests.map((request, i) => this.normalize(request, `requests[${i}].`));
    const replacing = reqs.findIndex((req) => req.ifExists !== 'keep');
    if (replacing !== -1) {
      throw new DelayValidationError(
        `requests[${replacing}].ifExists`,
        `'${reqs[replacing].ifExists}' is not supported by scheduleMany, whose duplicates keep their task; use schedule`,
      );
    }
    if (reqs.length === 0) return [];
    const caller = this.caller(options);
    const sql = this.db.in(caller);
    const nowMs = this.now();
    // Bulk rows are leased by the statement, each by its own due time against the horizon.
    const lockedBy = this.policy.leaseOnWrite(nowMs, nowMs, caller !== undefined);
    const now = new Date(nowMs);
    const horizon = new Date(this.policy.horizonMs(nowMs));
    const traceContext = this.runtime.ctx.tracing?.capture() ?? null;
    const unkeyed = reqs.every((req) => req.key === null);
    const rows = unkeyed
      ? unkeyedBulkRows(
          await this.leasing(
            caller,
            insertUnkeyedTasks(sql, reqs, lockedBy, now, horizon, traceContext),
          ),
          reqs,
          lockedBy,
          nowMs,
          this.policy,
        )
      : await this.leasing(caller, insertTasks(sql, reqs, lockedBy, now, horizon, traceContext));
    const typed = rows.map((row) => ({ ...row, type: reqs[row.n - 1].type }));
    followBulkWrite(this.wheel, this.runtime.ctx, typed, caller);
    this.tell('onScheduled', typed, caller);
    return bulkResults(sql, reqs, rows, unkeyed);
  }

  /** The task with this id, or the pending (else latest) task with this key; undefined if none. */
  async get<P = JsonValue>(
    ref: TaskRef,
    options: TransactionOptions = {},
  ): Promise<DelayedTask<P> | undefined> {
    const row = await getTask(this.db.in(this.caller(options)), checkTaskRef(ref));
    return row ? toTask<P>(row) : undefined;
  }

  /** Cancels a pending task; returns it cancelled. */
  async cancel(ref: TaskRef, options: TransactionOptions = {}): Promise<DelayedTask> {
    const checked = checkTaskRef(ref);
    const caller = this.caller(options);
    const row = await cancelTask(this.db.in(caller), checked, cancel(), new Date(this.now()));
    const cancelled = actedRow(checked, row, 'cancel');
    followCancel(this.wheel, cancelled.id, caller);
    this.tell('onCancelled', [cancelled], caller);
    return toTask(cancelled);
  }

  /** Moves a pending task to a new time; returns it moved. */
  async reschedule(
    ref: TaskRef,
    when: RunAt,
    options: TransactionOptions = {},
  ): Promise<DelayedTask> {
    const checked = checkTaskRef(ref);
    const nowMs = this.now();
    const dueAtMs = dueAtOf(when ?? {}, nowMs);
    return this.move(checked, options, 'reschedule', nowMs, rescheduleTask, (inCaller) =>
      reschedule(dueAtMs, nowMs, this.policy, inCaller),
    );
  }

  /**
   * Cancels every pending task of `entity` (only those of `options.types`, if
   * given), in one statement, in the caller's transaction with `{ manager }`:
   * rolled back with it. A task whose attempt is running is waited for (its
   * claim holds its row): cancelled if that attempt leaves it pending, left
   * out if it completed. Call it before locking rows that your handlers lock
   * too (as with cancel), so a handler and this never wait on each other.
   * No pending task is not an error: the result is empty.
   */
  async cancelEntity(
    entity: string,
    options: EntityActionOptions = {},
  ): Promise<EntityActionResult> {
    const scope = checkEntityScope(entity, options?.types);
    const caller = this.caller(options);
    const rows = await cancelEntityTasks(
      this.db.in(caller),
      scope,
      cancelEntity(),
      new Date(this.now()),
    );
    for (const row of rows) followCancel(this.wheel, row.id, caller);
    this.tell('onCancelled', rows, caller);
    return entityResult(scope.entity, rows);
  }

  /**
   * Moves every pending task of `entity` (of `options.types`, if given):
   * `{ by: '2h' }` each later by a duration from its own due time, or
   * `{ to: date }` all to one time. One statement, in the caller's
   * transaction with `{ manager }`; a running task is waited for, as in
   * cancelEntity. The wheels follow as for reschedule.
   */
  async rescheduleEntity(
    entity: string,
    move: EntityMoveRequest,
    options: EntityActionOptions = {},
  ): Promise<EntityActionResult> {
    const scope = checkEntityScope(entity, options?.types);
    const nowMs = this.now();
    const checked = checkEntityMove(move, nowMs);
    const caller = this.caller(options);
    const rows = await this.leasing(
      caller,
      rescheduleEntityTasks(
        this.db.in(caller),
        scope,
        rescheduleEntity(checked, nowMs, this.policy, caller !== undefined),
        new Date(nowMs),
      ),
    );
    for (const row of rows) this.track(row, caller);
    return entityResult(scope.entity, rows);
  }

  /**
   * Revives a dead-lettered task: pending again, due now, with fresh
   * attempts. ("Retry" is what the engine does after a failed attempt; this
   * is the operator's second chance for a task that has none left.)
   */
  revive(ref: TaskRef, options: TransactionOptions = {}): Promise<DelayedTask> {
    return this.reviveAs(ref, options, 'revive');
  }

  /** @deprecated Since 0.3: renamed {@link revive} (a retry is the engine's, after a failed attempt). */
  retry(ref: TaskRef, options: TransactionOptions = {}): Promise<DelayedTask> {
    return this.reviveAs(ref, options, 'retry');
  }

  private async reviveAs(
    ref: TaskRef,
    options: TransactionOptions,
    action: 'revive' | 'retry',
  ): Promise<DelayedTask> {
    const checked = checkTaskRef(ref);
    const nowMs = this.now();
    return this.move(checked, options, action, nowMs, reviveTask, (inCaller) =>
      revive(nowMs, this.policy, inCaller),
    );
  }

  /** One task moved (rescheduled, revived) by one statement; the wheel follows. */
  private async move(
    ref: TaskRef,
    options: TransactionOptions,
    action: 'reschedule' | 'revive' | 'retry',
    nowMs: number,
    statement: typeof rescheduleTask,
    transition: (inCaller: boolean) => MoveAction,
  ): Promise<DelayedTask> {
    const caller = this.caller(options);
    const sql = this.db.in(caller);
    const write = statement(sql, ref, transition(caller !== undefined), new Date(nowMs));
    const changed = actedRow(ref, await this.leasing(caller, write), action);
    this.track(changed, caller);
    return toTask(changed);
  }

  /** This instance's counters, what it holds and its lease: from memory, without a query, for gauges and readiness probes. */
  stats(): DelayStats {
    return statsSnapshot(this.runtime);
  }

  private get db() {
    return this.runtime.ctx.db;
  }

  private get policy() {
    return this.runtime.ctx.policy;
  }

  private get wheel() {
    return this.runtime.wheel;
  }

  /** Whose transaction a call writes in: the one it names, else the ambient one, else none. */
  private caller(options: TransactionOptions): CallerTransaction | undefined {
    return callerTransaction(options, this.runtime.ctx.options.ambientTransaction);
  }

  /** A write on the pool may lease its tasks here (one in the caller's transaction never does): a stop waits for it. */
  private leasing<T>(caller: CallerTransaction | undefined, write: Promise<T>): Promise<T> {
    return caller ? write : this.runtime.writes.track(write);
  }

  /** Tells the observer of these tasks once `caller` commits (at once without one). */
  private tell(
    hook: 'onScheduled' | 'onCancelled',
    rows: Pick<TaskRow, 'id' | 'type' | 'key' | 'due_at'>[],
    caller: CallerTransaction | undefined,
  ): void {
    const { observer, afterCommit } = this.runtime.ctx;
    if (rows.length === 0 || !observer.wants(hook)) return;
    const events = rows.map((row) => ({
      id: row.id,
      type: row.type,
      key: row.key,
      dueAt: row.due_at,
    }));
    afterCommit.run(caller, () => {
      for (const event of events) observer.emit(hook, event);
    });
  }

  /** Keeps the wheel in step with a row just written (the hold rules in firing/task-wheel.ts). */
  private track(row: TaskRow, caller: CallerTransaction | undefined): void {
    followWrite(this.wheel, this.runtime.ctx, row, caller);
  }

  private now(): number {
    return this.runtime.ctx.clock.now();
  }

  private normalize(request: ScheduleRequest<unknown>, prefix = ''): NormalizedRequest {
    const { allowUnknownTypes } = this.runtime.ctx.options;
    return normalizeRegistered(request, this.now(), this.registry, allowUnknownTypes, prefix);
  }
}
