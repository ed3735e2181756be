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

/** The task being run, seen from anywhere below its handler (a logger can add it to each record), or undefined outside one. */
export function currentTask(): CurrentTask | undefined {
  return scope.getStore();
}

export function runInTaskScope<T>(task: CurrentTask, fn: () => T): T {
  return scope.run(task, fn);
}
