/** Thrown out of a claim when a handler ignored its abort signal past the grace period. */
export class HandlerCutOff extends Error {
  constructor(
    readonly taskId: string,
    readonly taskType: string,
    readonly timeoutMs: number,
    /** The attempt that was cut off, from 1. */
    readonly attempt: number,
    readonly taskKey: string | null,
    readonly dueAt: Date,
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
 * Runs `work(signal)` under a deadline on real time (the claim's work is real
 * work, whatever clock drives due times). At `timeoutMs` the signal aborts;
 * if the work settles within `graceMs` after that, its own result stands (a
 * handler that stops on the signal rejects, and that is an ordinary failed
 * attempt); if not, `onCutOff()` is thrown and the work is abandoned.
 */
export async function withDeadline<T>(
  work: (signal: AbortSignal) => Promise<T>,
  timeoutMs: number,
  graceMs: number,
  onCutOff: () => Error,
): Promise<T> {
  const controller = new AbortController();
  let abortTimer: NodeJS.Timeout | undefined;
  let cutTimer: NodeJS.Timeout | undefined;
  const running = work(controller.signal);
  const cutOff = new Promise<never>((_resolve, reject) => {
    abortTimer = setTimeout(() => {
      controller.abort(new TaskTimeoutError(timeoutMs));
      cutTimer = setTimeout(() => reject(onCutOff()), graceMs);
      cutTimer.unref();
    }, timeoutMs);
    // A shutdown cuts off what is still running itself; these must not keep the process up.
    abortTimer.unref();
  });
  try {
    return await Promise.race([running, cutOff]);
  } finally {
    clearTimeout(abortTimer);
    clearTimeout(cutTimer);
    // An abandoned handler that rejects later must not become an unhandled rejection.
    running.catch(() => undefined);
  }
}
