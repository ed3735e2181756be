import type { EntityManager } from 'typeorm';
import type { AfterCommit } from '../observer/after-commit.js';
import type { TaskId } from '../task.types.js';
import { stateOf, type TaskRow } from '../tasks/task-row.js';
import type { TaskWheel } from './task-wheel.js';

/**
 * Keeps the wheel in step with a row just written (or found); in a caller's
 * transaction, again once it commits.
 */
export function trackWrite(
  wheel: TaskWheel,
  afterCommit: AfterCommit,
  row: TaskRow,
  manager: EntityManager | undefined,
): void {
  wheel.track(row, manager !== undefined);
  if (manager && stateOf(row) === 'pending' && wheel.handles(row.type))
    holdOnCommit(wheel, afterCommit, manager, row);
}

/**
 * A task written in the caller's transaction is unleased and was held
 * early (TaskWheel.track); if that hold fired before the commit, its claim
 * saw no row and let it go. Held again at the commit, it runs within a
 * tick of it, not at the next loader round. A transaction TypeORM does not
 * report (a raw BEGIN) still has the loader's round.
 */
export function holdOnCommit(
  wheel: TaskWheel,
  afterCommit: AfterCommit,
  manager: EntityManager,
  row: { id: TaskId; due_at: Date },
): void {
  const dueAtMs = row.due_at.getTime();
  afterCommit.run(manager, () => wheel.committed(row.id, dueAtMs));
}
