import type { DelayObserver } from 'nest-delay';

const HOOKS = [
  'onScheduled',
  'onCancelled',
  'onExecuted',
  'onFailed',
  'onDeadLettered',
  'onSnoozed',
  'onClaim',
] as const satisfies ReadonlyArray<keyof DelayObserver>;

/**
 * One DelayObserver calling each of `parts` in order (metrics first, then
 * the events bridge), or undefined when there is none, so the engine then
 * builds no event at all. A hook only one part has is that part's method,
 * with no wrapper around it.
 */
export function combineObservers(parts: DelayObserver[]): DelayObserver | undefined {
  if (parts.length === 0) return undefined;
  if (parts.length === 1) return parts[0];
  const combined: Record<string, (event: never) => void> = {};
  for (const hook of HOOKS) {
    const calls = parts
      .filter((part) => typeof part[hook] === 'function')
      .map((part) => (part[hook] as (event: never) => void).bind(part));
    if (calls.length === 1) combined[hook] = calls[0];
    else if (calls.length > 1)
      combined[hook] = (event) => {
        for (const call of calls) call(event);
      };
  }
  return combined as DelayObserver;
}
