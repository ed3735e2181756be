import { describeRef, taskInState } from '../delay.messages.js';
import type { TaskRef, TaskState } from '../task.types.js';

/** The task exists but the action does not fit its state (cancel an executed task, revive a pending one). */
export class TaskStateError extends Error {
  constructor(
    readonly ref: TaskRef,
    readonly state: TaskState,
    readonly action: 'cancel' | 'reschedule' | 'revive' | 'retry',
  ) {
    super(taskInState(describeRef(ref), state, action));
    this.name = 'TaskStateError';
  }
}
