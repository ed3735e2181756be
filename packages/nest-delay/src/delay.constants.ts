/** Metadata key under which @DelayedTaskHandler stores its task type. */
export const DELAYED_TASK_HANDLER = 'delay:task-handler';

/** Metadata key under which @RecurringTask stores its schedule. */
export const RECURRING_TASK = 'delay:recurring-task';
