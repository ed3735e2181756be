import { taskNotFound } from '../delay.messages.js';

export class TaskNotFoundError extends Error {
  constructor(readonly ref: string | number) {
    super(taskNotFound(ref));
    this.name = 'TaskNotFoundError';
  }
}
