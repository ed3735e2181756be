import { Injectable } from '@nestjs/common';
import { DelayService } from '../delay.service.js';
import {
  checkText,
  DelayValidationError,
  TaskNotFoundError,
  TaskStateError,
} from '../errors/delay-errors.js';
import { DelayRuntime } from '../runtime/delay.runtime.js';
import {
  getInstance,
  listInstances,
  listTasks,
  TASK_STATES,
  type InstanceRow,
  type TaskPosition,
} from './admin-statements.js';
import { findTasks } from '../tasks/task-statements.js';
import { toTask } from '../tasks/task-row.js';
import type { DelayedTask, TaskRef } from '../task.types.js';
import type {
  InstanceInfo,
  RetryDeadResult,
  ReviveDeadResult,
  TaskDetails,
  TaskListFilter,
  TaskPage,
  WheelSnapshot,
} from './admin.types.js';
import { TaskCountsCache, type TaskCounts } from './task-counts.js';
import { buildTimeline, readTimeline, type EntityTimeline } from './entity-timeline.js';
import { checkEntity } from '../tasks/schedule-request.js';
import { checkTaskId } from '../task-ref.js';

/** Rows read per state by `counts` (and tasks counted per instance) unless told otherwise. */
export const DEFAULT_COUNT_CAP = 100_000;
/** How long one computation of `counts` serves every caller. */
const DEFAULT_COUNTS_MAX_AGE_MS = 5_000;
/** The most tasks in one page, or in one bulk revive. */
export const MAX_PAGE = 1_000;

/**
 * What an operator's console needs beside DelayService: listing with keyset
 * paging, a task with the instance that holds it, bounded and cached counts,
 * the instances and their leases, this instance's wheel, and the actions an
 * operator takes. Every action goes through DelayService, so the wheels and
 * the leases stay as they would for any caller; reads never change anything.
 */
@Injectable()
export class DelayAdmin {
  private readonly countsCache: TaskCountsCache;

  constructor(
    private readonly runtime: DelayRuntime,
    private readonly delay: DelayService,
  ) {
    this.countsCache = new TaskCountsCache(
      () => this.runtime.ctx.db.pool,
      runtime.ctx.clock,
      () => this.runtime.tablesEmptied,
    );
  }

  /** Tasks matching `filter` in (due time, id) order, `limit` (default 50) a page. */
  async list(
    filter: TaskListFilter = {},
    page: { limit?: number; cursor?: string } = {},
  ): Promise<TaskPage> {
    checkFilter(filter);
    const limit = checkLimit(page.limit ?? 50, 'limit');
    const after = page.cursor === undefined ? null : decodeTaskCursor(page.cursor);
    const rows = await listTasks(this.db, filter, after, limit + 1);
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    return {
      items: items.map((row) => toTask(row)),
      nextCursor:
        rows.length > limit ? encodeTaskCursor({ dueUs: last.due_us, id: last.id }) : null,
    };
  }

  /** A task, the instance that holds it and whether this instance's wheel has it; undefined if none. */
  async details(ref: TaskRef): Promise<TaskDetails | undefined> {
    const task = await this.delay.get(ref);
    if (!task) return undefined;
    const lease =
      task.lockedBy === null
        ? undefined
        : await getInstance(this.db, task.lockedBy, DEFAULT_COUNT_CAP + 1);
    return {
      task,
      holder: lease ? this.instanceInfo(lease, DEFAULT_COUNT_CAP) : null,
      inThisWheel: this.runtime.wheel.has(task.id),
    };
  }

  /** A pending task due now: leased here and fired by this instance's wheel at its next tick. */
  runNow(ref: TaskRef): Promise<DelayedTask> {
    return this.delay.reschedule(ref, { delay: 0 });
  }

  /**
   * Revives up to `limit` dead-lettered tasks matching `filter`, oldest due
   * first, one by one through DelayService.revive. A task someone else
   * revived in between is skipped, not an error.
   */
  async reviveDead(
    filter: Omit<TaskListFilter, 'state'>,
    limit: number,
  ): Promise<ReviveDeadResult> {
    checkFilter(filter);
    checkLimit(limit, 'limit');
    const dead = await findTasks(this.db, { ...filter, state: 'dead' }, limit + 1);
    const result: ReviveDeadResult = { revived: [], skipped: 0, more: dead.length > limit };
    for (const row of dead.slice(0, limit)) {
      try {
        result.revived.push((await this.delay.revive({ id: row.id })).id);
      } catch (error) {
        if (!(error instanceof TaskStateError || error instanceof TaskNotFoundError)) throw error;
        result.skipped++;
      }
    }
    return result;
  }

  /** @deprecated Since 0.3: renamed {@link reviveDead}, whose result names the tasks `revived`. */
  async retryDead(filter: Omit<TaskListFilter, 'state'>, limit: number): Promise<RetryDeadResult> {
    const { revived, ...rest } = await this.reviveDead(filter, limit);
    return { retried: revived, ...rest };
  }

  /**
   * Everything about one entity (`order:42`): every task it had and has, in
   * time order (scheduled, each attempt with its instance, retries, snoozes,
   * moves, cancels, dead letters, executed), what is still due, and what
   * retention forgets. Reads only the entity's rows, through its indexes.
   */
  async timeline(entity: string): Promise<EntityTimeline> {
    if (entity === undefined) {
      throw new DelayValidationError(
        'entity',
        "is required: the entity's name, such as 'order:42'",
      );
    }
    checkEntity(entity, 'entity');
    const { tasks, events } = await readTimeline(this.db, entity);
    const { keepFinishedMs, keepDeadMs } = this.runtime.ctx.options;
    return buildTimeline(entity, tasks, events, { keepFinishedMs, keepDeadMs });
  }

  /** Tasks per state and type, at most `cap` rows read per state, shared for `maxAgeMs`. */
  counts({
    cap = DEFAULT_COUNT_CAP,
    maxAgeMs = DEFAULT_COUNTS_MAX_AGE_MS,
  }: { cap?: number; maxAgeMs?: number } = {}): Promise<TaskCounts> {
    if (!Number.isSafeInteger(cap) || cap < 1) {
      throw new DelayValidationError('cap', `must be a positive integer; got ${cap}`);
    }
    return this.countsCache.get(cap, maxAgeMs);
  }

  /** Every instance with a lease row, live or expired; held tasks counted up to `heldCap`. */
  async instances(heldCap = DEFAULT_COUNT_CAP): Promise<InstanceInfo[]> {
    const rows = await listInstances(this.db, heldCap + 1);
    return rows.map((row) => this.instanceInfo(row, heldCap));
  }

  /** This instance's wheel in `regions` regions of equal slot count (the last may be shorter). */
  wheel(regions = 60): WheelSnapshot {
    const { slots } = this.runtime.ctx.options;
    if (!Number.isSafeInteger(regions) || regions < 1 || regions > slots) {
      throw new DelayValidationError(
        'regions',
        `must be an integer from 1 to the wheel's ${slots} slots; got ${regions}`,
      );
    }
    const { ctx } = this.runtime;
    return {
      instanceId: ctx.options.instanceId,
      nowMs: ctx.clock.now(),
      windowMs: ctx.options.windowMs,
      ...this.runtime.wheel.census(Math.ceil(slots / regions)),
    };
  }

  private get db() {
    return this.runtime.ctx.db.pool;
  }

  private instanceInfo(row: InstanceRow, heldCap: number): InstanceInfo {
    const nowMs = this.runtime.ctx.clock.now();
    const heldCapped = row.held > heldCap;
    return {
      id: row.id,
      startedAt: row.started_at,
      heartbeatAt: row.heartbeat_at,
      leaseUntil: row.lease_until,
      live: row.lease_until.getTime() >= nowMs,
      self: row.id === this.runtime.ctx.options.instanceId,
      held: heldCapped ? heldCap : row.held,
      heldCapped,
      clockOffsetMs:
        row.db_heartbeat_at === null
          ? null
          : row.heartbeat_at.getTime() - row.db_heartbeat_at.getTime(),
      systemClockOffsetMs: row.clock_correction_ms === null ? null : -row.clock_correction_ms,
    };
  }
}

function checkLimit(limit: number, field: string): number {
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE) {
    throw new DelayValidationError(field, `must be an integer from 1 to ${MAX_PAGE}; got ${limit}`);
  }
  return limit;
}

function checkFilter(filter: TaskListFilter): void {
  if (filter.state !== undefined && !TASK_STATES.includes(filter.state)) {
    throw new DelayValidationError(
      'state',
      `must be one of ${TASK_STATES.join(', ')}; got ${JSON.stringify(filter.state)}`,
    );
  }
  for (const field of ['dueFrom', 'dueBefore'] as const) {
    const value = filter[field];
    if (value !== undefined && !(value instanceof Date && Number.isFinite(value.getTime()))) {
      throw new DelayValidationError(field, `must be a valid Date; got ${String(value)}`);
    }
  }
  if (filter.type !== undefined) checkText(filter.type, 'type', 200);
  if (filter.key !== undefined) checkText(filter.key, 'key', 500);
  if (filter.keyPrefix !== undefined) checkText(filter.keyPrefix, 'keyPrefix', 500);
  if (filter.entity !== undefined) checkText(filter.entity, 'entity', 500);
}

const BASE64URL = /^[A-Za-z0-9_-]{1,100}$/;
const DECODED = /^(-?\d{1,18})\.(\d{1,19})$/;

/** A listing's cursor, opaque to clients: base64url of `<due time in µs>.<id>`. */
function encodeTaskCursor(position: TaskPosition): string {
  return Buffer.from(`${position.dueUs}.${position.id}`).toString('base64url');
}

/** The position a cursor from `encodeTaskCursor` names; anything else is a DelayValidationError on `cursor`. */
function decodeTaskCursor(cursor: unknown): TaskPosition {
  // Buffer.from skips characters that are not base64url, so check them first.
  const match =
    typeof cursor === 'string' && BASE64URL.test(cursor)
      ? DECODED.exec(Buffer.from(cursor, 'base64url').toString('utf8'))
      : null;
  try {
    if (match) return { dueUs: match[1], id: checkTaskId(match[2]) };
  } catch {
    // Not an id: refused as any other cursor this listing never returned.
  }
  throw new DelayValidationError(
    'cursor',
    'is not a cursor this listing returned; start again without it',
  );
}
