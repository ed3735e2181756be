import type { ScheduleRequest, TaskContext } from './task.types.js';

/**
 * A duration the compiler can check: `'250ms'`, `'30s'`, `'30m'`, `'48h'`,
 * `'2d'`, or a number of milliseconds. `'20 seconds'` does not compile (the
 * string API's `Duration` takes any string and refuses it at run time).
 */
export type DurationText = number | `${number}${'ms' | 's' | 'm' | 'h' | 'd'}`;

/**
 * `T` when every value in it survives JSON as itself (a task's payload is
 * stored as jsonb), else a type that names the culprit: a `Date` (it comes
 * back a string), a function, `undefined` outside an optional property, a
 * bigint, a symbol, a Map or a Set.
 */
export type JsonPayload<T> = T extends string | number | boolean | null
  ? T
  : T extends Date
    ? 'a Date is not JSON: pass its ISO string'
    : T extends bigint | symbol | undefined | ((...args: never[]) => unknown)
      ? 'not a JSON value'
      : T extends ReadonlyMap<unknown, unknown> | ReadonlySet<unknown>
        ? 'a Map or Set is not JSON: pass an array or an object'
        : T extends ReadonlyArray<infer U>
          ? ReadonlyArray<JsonPayload<U>>
          : { [K in keyof T]: JsonPayload<Exclude<T[K], undefined>> };

/** When a typed task runs: a `delay` from now or a `runAt`, with the string API's other fields. */
export type TaskTiming = Omit<ScheduleRequest<never>, 'type' | 'payload' | 'delay' | 'maxWait'> & {
  delay?: DurationText;
  maxWait?: DurationText;
};

/**
 * A task type declared once with its payload's type, used by both ends:
 * `@DelayedTaskHandler(CloseUnpaid)` checks the handler's payload parameter,
 * and `schedule(CloseUnpaid.with({ orderId }, { delay: '30m' }))` the
 * payload and timing written.
 */
export interface TaskDefinition<P> {
  readonly type: string;
  /** The request that schedules this task: `delayService.schedule(Task.with(payload, timing))`. */
  with(payload: P, timing?: TaskTiming): ScheduleRequest<P>;
}

/** A handler method of a typed task: its payload parameter must take the task's payload. */
export type TypedHandler<P> = (payload: P, context: TaskContext<P>) => unknown;

/**
 * Declares a task type and its payload's type, e.g.
 * `export const CloseUnpaid = defineTask<{ orderId: string }>('order.close-unpaid')`.
 * The type is checked at compile time only; the runtime still checks a
 * handler exists for it (allowUnknownTypes aside) and that the payload is JSON.
 */
export function defineTask<P>(
  // A payload type that is not JSON makes this parameter name the culprit.
  type: P extends JsonPayload<P> ? string : { notJson: JsonPayload<P> },
): TaskDefinition<P> {
  if (typeof type !== 'string' || type.trim() === '') {
    throw new TypeError(`defineTask needs a task type name; got ${JSON.stringify(type)}`);
  }
  return {
    type,
    with: (payload, timing = {}) => ({ ...timing, type, payload }),
  };
}
