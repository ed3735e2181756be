import { parseDuration, type Duration } from './duration.js';

/**
 * What a handler can return instead of nothing, to say what became of its
 * task (River's JobCancel and JobSnooze, Oban's `{:cancel, _}` and `{:snooze, _}`):
 *
 *     if (!isValid(payload)) return TaskOutcome.discard('payload.orderId is not a UUID');
 *     if (!provider.ready()) return TaskOutcome.snooze('5m');
 *
 * Either way the handler's own writes through `manager` commit, as after a
 * normal return. Throwing is still how a handler says "failed, retry me".
 */
export class TaskOutcome {
  private constructor(
    readonly kind: 'discard' | 'snooze',
    readonly reason: string | undefined,
    readonly snoozeMs: number,
  ) {}

  /** Dead-letter the task now, with `reason` as its last error: retrying cannot help it. */
  static discard(reason: string): TaskOutcome {
    return new TaskOutcome('discard', String(reason), 0);
  }

  /** Run the task again after `delay`, without spending an attempt. */
  static snooze(delay: Duration): TaskOutcome {
    return new TaskOutcome('snooze', undefined, parseDuration(delay, 'TaskOutcome.snooze delay'));
  }
}
