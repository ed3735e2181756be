import { describeRef, taskNotFound } from '../delay.messages.js';
import type { TaskRef } from '../task.types.js';

/** No task has that id, or ever had that key. */
export class TaskNotFoundError extends Error {
  constructor(readonly ref: TaskRef) {
    super(taskNotFound(describeRef(ref)));
    this.name = 'TaskNotFoundError';
  }
}
