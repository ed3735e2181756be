import { currentTask } from 'nest-delay';
import { currentRequest } from './request-context.js';

/** The fields a line gets from where it was logged: the request, or the task being run. */
export interface ScopeFields {
  requestId?: string;
  taskId?: string;
  taskType?: string;
  taskKey?: string | null;
  attempt?: number;
}

export function scopeFields(): ScopeFields {
  const request = currentRequest();
  const task = currentTask();
  if (!request && !task) return {};
  const fields: ScopeFields = {};
  if (request) fields.requestId = request.requestId;
  if (task) {
    fields.taskId = task.id;
    fields.taskType = task.type;
    fields.taskKey = task.key;
    fields.attempt = task.attempt;
  }
  return fields;
}
