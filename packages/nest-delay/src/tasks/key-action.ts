import type { NormalizedRequest } from './schedule-request.js';
import { debounce, replace, type DebounceAction, type ReplaceAction } from './task-transitions.js';
import type { WindowPolicy } from './window-policy.js';

/** What a keyed schedule does to the pending task already holding its key. */
export function keyAction(
  req: NormalizedRequest,
  nowMs: number,
  policy: WindowPolicy,
  inCaller: boolean,
): ReplaceAction | DebounceAction | 'keep' {
  switch (req.ifExists) {
    case 'keep':
      return 'keep';
    case 'replace':
      return replace(req.dueAtMs, nowMs, policy, inCaller);
    case 'debounce':
      return debounce(req.maxWaitMs as number, nowMs, policy, inCaller);
  }
}
