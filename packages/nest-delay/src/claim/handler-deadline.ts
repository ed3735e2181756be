import type { TaskRow } from '../tasks/task-row.js';

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
 * builds an AbortSignal (an EventTarget, ~3 us), which a handler that never
 * looks at its signal should not pay for in a burst. One promise, no race or
 * async frame: this runs once per task.
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
