import { AsyncLocalStorage } from 'node:async_hooks';
import type { TaskId } from '../task.types.js';

/** The task whose handler (or outcome) the current code runs for. */
export interface CurrentTask {
  id: TaskId;
  type: string;
  key: string | null;
  attempt: number;
}

const scope = new AsyncLocalStorage<CurrentTask>();

/**
 * The task being run, seen from anywhere below its handler (its services, the
 * app's logger), or undefined outside one. A logger adds it to every line, so
 * each line a task causes names its id, type, key and attempt.
 */
export function currentTask(): CurrentTask | undefined {
  return scope.getStore();
}

export function runInTaskScope<T>(task: CurrentTask, fn: () => T): T {
  return scope.run(task, fn);
}
