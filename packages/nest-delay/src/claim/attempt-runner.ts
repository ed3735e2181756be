import { AsyncLocalStorage } from 'node:async_hooks';
import { errorText, noHandlerAtRun, noManager } from '../delay.messages.js';
import type { HandlerRegistry } from '../handler-registry.js';
import type { DelayContext } from '../context/delay-context.js';
import { CUT_OFF_GRACE_MS } from '../context/tuning.js';
import { earlierOccurrenceRetrying } from '../schedules/recurring-statements.js';
import type { Occurrence } from '../schedules/schedule.types.js';
import type { ClaimConnection } from '../store/claim-connection.js';
import { TaskOutcome, type ClaimClient, type TaskContext, type TaskId } from '../task.types.js';
import { toTask, type TaskRow, type ClaimRow } from '../tasks/task-row.js';
import {
  complete,
  discard,
  fail,
  skip,
  snooze,
  type Fate,
  type TransitionRules,
} from '../tasks/task-transitions.js';
import type { PassSpans } from '../tracing/pass-spans.js';

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

/**
 * Runs one claimed task's handler, inside the claim transaction, under its
 * timeout and in the task's scope, and decides its fate: complete, or what
 * its TaskOutcome asks, or a failure (retry or exhaust). Writes nothing: the
 * claim batch writes the fate (claim-batch.ts).
 */
export class AttemptRunner {
  constructor(
    private readonly ctx: DelayContext,
    private readonly registry: HandlerRegistry,
    private readonly rules: TransitionRules,
  ) {}

  /**
   * One attempt of `row`, claimed at `nowMs`. Throws HandlerCutOff when the
   * handler outlived its timeout and grace. `onStart` is called once its
   * synchronous part ran: it has started, whatever it does next.
   */
  async run(
    connection: ClaimConnection,
    row: ClaimRow,
    nowMs: number,
    spans: PassSpans | undefined,
    onStart?: (row: ClaimRow) => void,
  ): Promise<Fate> {
    spans?.open(row, nowMs);
    const handler = this.registry.get(row.type);
    if (!handler) return discard(row, noHandlerAtRun(row.type));
    const occurrence = occurrenceOf(row);
    // Only a schedule that skips overlaps asks (one round trip it spares the others).
    if (
      occurrence &&
      row.overlap === 'skip' &&
      (await earlierOccurrenceRetrying(connection.sql, occurrence.schedule, occurrence.scheduledAt))
    )
      return skip(
        row,
        'skipped: an earlier occurrence of its schedule is still retrying (overlap: skip)',
      );
    const manager = connection.runner?.manager;
    const { sql } = connection;
    // One statement, one result: the array form is for scripts, which handlers do not send here.
    const client = connection.client as unknown as ClaimClient;
    const { instanceId, ambientTransaction: ambient } = this.ctx.options;
    let returned: unknown;
    try {
      returned = await withDeadline(
        (controller) => {
          const context: TaskContext = {
            task: toTask(row),
            get manager() {
              if (!manager) throw new Error(noManager());
              return manager;
            },
            sql,
            client,
            attempt: row.attempts,
            instanceId,
            occurrence,
            // Built when read (see withDeadline): most handlers never look.
            get signal() {
              return controller.signal;
            },
          };
          const handle = () => handler.fn(row.payload, context);
          // In the task's scope: whatever the handler logs names the task.
          const running = scope.run(scopeOf(row), () =>
            call(
              spans,
              row.id,
              ambient ? () => ambient.runHandler(context, async () => handle()) : handle,
            ),
          );
          onStart?.(row);
          return running;
        },
        handler.timeoutMs,
        Math.min(CUT_OFF_GRACE_MS, handler.timeoutMs),
        () => new HandlerCutOff(row, handler.timeoutMs),
      );
    } catch (error) {
      spans?.failed(row.id, error);
      if (error instanceof HandlerCutOff) throw error;
      const stack = error instanceof Error ? error.stack : undefined;
      return fail(row, errorText(error), nowMs, this.rules, stack);
    }
    if (!(returned instanceof TaskOutcome)) return complete(row);
    if (returned.kind === 'discard') return discard(row, returned.reason ?? 'discarded');
    return snooze(row, returned.snoozeMs, nowMs, this.rules.policy);
  }
}

/** What a log line or a handler's logger says about the task it runs for. */
export function scopeOf(row: TaskRow): CurrentTask {
  return { id: row.id, type: row.type, key: row.key, attempt: row.attempts };
}

/**
 * A handler's result as a promise: one that throws before its first await
 * rejects it. With spans, it runs under its task's: what it does nests there.
 */
function call(spans: PassSpans | undefined, id: TaskId, fn: () => unknown): Promise<unknown> {
  try {
    return Promise.resolve(spans ? spans.within(id, fn) : fn());
  } catch (error) {
    return Promise.reject(error);
  }
}

function occurrenceOf(row: ClaimRow): Occurrence | undefined {
  if (row.schedule_name === null || row.occurrence_at === null) return undefined;
  return {
    schedule: row.schedule_name,
    scheduledAt: row.occurrence_at,
    previousAt: row.previous_occurrence_at,
  };
}

/** Thrown out of a claim when a handler ignored its abort signal past the grace period. */
export class HandlerCutOff extends Error {
  constructor(
    /** The task as its claim read it, the cut-off attempt counted. */
    readonly row: TaskRow,
    readonly timeoutMs: number,
  ) {
    super(
      `handler timed out after ${timeoutMs} ms and did not stop when its signal aborted; ` +
        `its claim transaction was cut off`,
    );
    this.name = 'HandlerCutOff';
  }
}

/** What a handler's signal aborts with. */
export class TaskTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`handler timed out after ${timeoutMs} ms`);
    this.name = 'TaskTimeoutError';
  }
}

/**
 * Runs `work(controller)` under a deadline on real time (the claim's work is
 * real work, whatever clock drives due times). At `timeoutMs` the controller
 * aborts; if the work settles within `graceMs` after that, its own result
 * stands (a handler that stops on the signal rejects, and that is an ordinary
 * failed attempt); if not, `onCutOff()` is thrown and the work is abandoned.
 *
 * `work` gets the controller, not its signal: reading `controller.signal`
 * builds an AbortSignal, which a handler that never looks at it should not
 * pay for. One promise, no race or async frame: this runs once per task.
 */
export function withDeadline<T>(
  work: (controller: AbortController) => Promise<T>,
  timeoutMs: number,
  graceMs: number,
  onCutOff: () => Error,
): Promise<T> {
  const controller = new AbortController();
  const running = work(controller);
  return new Promise<T>((resolve, reject) => {
    let cutTimer: NodeJS.Timeout | undefined;
    const expire = () => {
      controller.abort(new TaskTimeoutError(timeoutMs));
      cutTimer = setTimeout(() => reject(onCutOff()), graceMs);
      cutTimer.unref();
    };
    const abortTimer = setTimeout(expire, timeoutMs);
    // A shutdown cuts off what is still running itself; these must not keep the process up.
    abortTimer.unref();
    // Rejecting after a cut-off is a no-op, so an abandoned handler's late
    // rejection is handled here and never becomes an unhandled one.
    running.then(
      (value) => {
        clearTimeout(abortTimer);
        clearTimeout(cutTimer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(abortTimer);
        clearTimeout(cutTimer);
        reject(error);
      },
    );
  });
}

/** A committed fate worth a line, inside the task's scope: a structured logger adds its id, type, key and attempt. */
export function logFate(logger: DelayContext['logger'], fate: Fate): void {
  // The common fates log nothing: a burst's completions build no message.
  if (fate.transition === 'complete' || fate.transition === 'snooze' || fate.transition === 'skip')
    return;
  const { row } = fate;
  const name = `Task ${row.id} (${row.type})`;
  // The thrown error's stack frames follow the line (last_error keeps its message only).
  const frames = (stack?: string) => stack?.split('\n').slice(1).join('\n') || undefined;
  let write: (() => void) | undefined;
  if (fate.transition === 'retry') {
    const message = `${name} failed attempt ${row.attempts}/${row.max_attempts}, retrying at ${new Date(fate.dueAtMs).toISOString()}: ${fate.error}`;
    const stack = frames(fate.stack);
    write = () => logger.warn(stack ? `${message}\n${stack}` : message);
  } else if (fate.transition === 'exhaust') {
    const message = `${name} dead-lettered after ${fate.attempts} attempt(s): ${fate.reason}`;
    write = () => logger.error(message, fate.stack);
  } else if (fate.transition === 'discard')
    write = () => logger.error(`${name} dead-lettered at once: ${fate.reason}`);
  if (write) scope.run(scopeOf(row), write);
}
