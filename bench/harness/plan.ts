/**
 * Which tasks a run schedules, as a formula rather than a list (it crosses the
 * process boundary): task i of 1..count updates bench_order row i and is due
 * at firstDueMs + (i − 1) × stepMs, epoch milliseconds. With `offset`, task i
 * updates row offset + i instead (a slice of a longer plan, as the soak
 * schedules second by second).
 */
export interface TaskPlan {
  count: number;
  firstDueMs: number;
  stepMs: number;
  offset?: number;
}

export interface Task {
  orderId: number;
  dueAtMs: number;
}

/** Task i (1-based) of the plan. */
export function taskAt(plan: TaskPlan, i: number): Task {
  return {
    orderId: (plan.offset ?? 0) + i,
    dueAtMs: plan.firstDueMs + (i - 1) * plan.stepMs,
  };
}

/** Tasks from..to (inclusive, 1-based). */
export function tasksBetween(plan: TaskPlan, from: number, to: number): Task[] {
  const tasks: Task[] = [];
  for (let id = from; id <= Math.min(to, plan.count); id++) tasks.push(taskAt(plan, id));
  return tasks;
}

/** The next whole second at least `leadMs` from now: every system gets the same kind of instant. */
export function wholeSecondAfter(leadMs: number): number {
  return Math.ceil((Date.now() + leadMs) / 1000) * 1000;
}
