import type { DataSource, EntityManager } from 'typeorm';
import { INSERT_TASK, INSERT_TASKS, REPLACE_BY_KEY } from './sql/insert-task.js';
import {
  CANCEL_TASK,
  GET_PENDING_BY_KEY,
  GET_TASK,
  RESCHEDULE_TASK,
  RETRY_DEAD_TASK,
} from './sql/manage-tasks.js';
import {
  DATABASE_NOW,
  HEARTBEAT,
  LEASE_DUE_TASKS,
  RELEASE_EXPIRED_INSTANCES,
  RELEASE_INSTANCE_TASKS,
  RETIRE_INSTANCE,
  RELEASE_ORPHANED_TASKS,
} from './sql/leases.js';
import { FIND_OVERDUE_UNHELD, FIND_PENDING_BY_IDS } from './sql/claim-tasks.js';
import type { NormalizedRequest } from './schedule-request.js';
import type { ParsedRef } from './task-ref.js';
import type { TaskRow } from './task-row.js';

export interface DueRow {
  id: string;
  due_at: Date;
}

/**
 * Every statement the API and the loader run against delayed_task, each a
 * named constant in ./sql. With a transactional EntityManager the statement
 * joins the caller's transaction; otherwise it runs on its own.
 */
export class TaskStore {
  constructor(private readonly dataSource: DataSource) {}

  async rows<T>(sql: string, params: unknown[], manager?: EntityManager): Promise<T[]> {
    const runner = manager?.queryRunner;
    if (runner?.isReleased) {
      throw new Error(
        'The EntityManager passed as { manager } belongs to a transaction that has already ended',
      );
    }
    if (runner) return (await runner.query(sql, params, true)).records as T[];
    const own = this.dataSource.createQueryRunner();
    try {
      return (await own.query(sql, params, true)).records as T[];
    } finally {
      await own.release();
    }
  }

  async insert(
    req: NormalizedRequest,
    lockedBy: string | null,
    now: Date,
    manager?: EntityManager,
  ) {
    const params = [
      req.type,
      req.key,
      req.payloadJson,
      new Date(req.dueAtMs),
      req.maxAttempts,
      lockedBy,
      now,
    ];
    return (await this.rows<TaskRow>(INSERT_TASK, params, manager))[0];
  }

  async replaceByKey(
    req: NormalizedRequest,
    lockedBy: string | null,
    now: Date,
    manager?: EntityManager,
  ) {
    const params = [
      req.key,
      req.type,
      req.payloadJson,
      new Date(req.dueAtMs),
      req.maxAttempts,
      lockedBy,
      now,
    ];
    return (await this.rows<TaskRow>(REPLACE_BY_KEY, params, manager))[0];
  }

  async pendingByKey(key: string, manager?: EntityManager) {
    return (await this.rows<TaskRow>(GET_PENDING_BY_KEY, [key], manager))[0];
  }

  async insertMany(
    reqs: NormalizedRequest[],
    lockedBy: string | null,
    now: Date,
    horizon: Date,
    manager?: EntityManager,
  ) {
    const params = [
      reqs.map((r) => r.type),
      reqs.map((r) => r.key),
      reqs.map((r) => r.payloadJson),
      reqs.map((r) => new Date(r.dueAtMs)),
      reqs.map((r) => r.maxAttempts),
      lockedBy,
      now,
      horizon,
    ];
    return this.rows<DueRow & { key: string | null; locked_by: string | null }>(
      INSERT_TASKS,
      params,
      manager,
    );
  }

  async cancel(ref: ParsedRef, now: Date, manager?: EntityManager) {
    return (await this.rows<{ id: string }>(CANCEL_TASK, [ref.id, ref.key, now], manager))[0];
  }

  async reschedule(
    ref: ParsedRef,
    dueAt: Date,
    now: Date,
    lockedBy: string | null,
    manager?: EntityManager,
  ) {
    return (
      await this.rows<TaskRow>(RESCHEDULE_TASK, [ref.id, ref.key, dueAt, now, lockedBy], manager)
    )[0];
  }

  async retryDead(ref: ParsedRef, now: Date, lockedBy: string | null) {
    return (await this.rows<TaskRow>(RETRY_DEAD_TASK, [ref.id, ref.key, now, lockedBy]))[0];
  }

  async get(ref: ParsedRef, manager?: EntityManager) {
    return (await this.rows<TaskRow>(GET_TASK, [ref.id, ref.key], manager))[0];
  }

  async findPending(ids: number[]) {
    return this.rows<DueRow & { locked_by: string | null }>(FIND_PENDING_BY_IDS, [ids]);
  }

  /** A page of overdue unheld tasks in due order, after `after` (null: from the first). */
  async findOverdueUnheld(now: Date, after: DueRow | null, limit: number) {
    return this.rows<DueRow>(FIND_OVERDUE_UNHELD, [
      now,
      after?.due_at ?? '-infinity',
      after?.id ?? 0,
      limit,
    ]);
  }

  /** Renews this instance's lease; returns instances whose lease expired and the database's now. */
  async heartbeat(
    instanceId: string,
    now: Date,
    leaseUntil: Date,
  ): Promise<{ expired: string[]; dbNow: Date }> {
    const [row] = await this.rows<{ expired: string[]; db_now: Date }>(HEARTBEAT, [
      instanceId,
      now,
      leaseUntil,
    ]);
    return { expired: row.expired, dbNow: row.db_now };
  }

  async releaseExpiredInstances(ids: string[], now: Date) {
    await this.rows(RELEASE_EXPIRED_INSTANCES, [ids, now]);
  }

  async releaseOrphans(now: Date) {
    await this.rows(RELEASE_ORPHANED_TASKS, [now]);
  }

  async releaseInstance(instanceId: string) {
    await this.rows(RELEASE_INSTANCE_TASKS, [instanceId]);
  }

  async retireInstance(instanceId: string) {
    await this.rows(RETIRE_INSTANCE, [instanceId]);
  }

  /** `after`: only tasks due after it; '-infinity' for every unheld task before the horizon. */
  async leaseDue(
    instanceId: string,
    horizon: Date,
    limit: number,
    now: Date,
    after: Date | '-infinity',
  ) {
    return this.rows<DueRow>(LEASE_DUE_TASKS, [instanceId, horizon, limit, now, after]);
  }

  async databaseNow(): Promise<Date> {
    return (await this.rows<{ now: Date }>(DATABASE_NOW, []))[0].now;
  }
}
