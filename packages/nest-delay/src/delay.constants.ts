/** Metadata key under which @DelayedTaskHandler stores its task type. */
export const DELAYED_TASK_HANDLER = 'delay:task-handler';
