import type { DelayObserver, TaskExecutedEvent } from 'nest-delay';
import { combineObservers } from './delay-observer.js';

describe('combineObservers', () => {
  const event = { id: '1', type: 't', latenessMs: 5 } as TaskExecutedEvent;

  it('is undefined for no part, the part itself for one', () => {
    const only: DelayObserver = { onExecuted: () => undefined };
    expect(combineObservers([])).toBeUndefined();
    expect(combineObservers([only])).toBe(only);
  });

  it('calls every part that has a hook, in order, and leaves out hooks nobody has', () => {
    const calls: string[] = [];
    const metrics: DelayObserver = { onExecuted: () => calls.push('metrics') };
    const bridge: DelayObserver = {
      onExecuted: () => calls.push('bridge'),
      onClaim: () => calls.push('claim'),
    };
    const combined = combineObservers([metrics, bridge])!;
    combined.onExecuted!(event);
    expect(calls).toEqual(['metrics', 'bridge']);
    expect(combined.onClaim).toBeDefined();
    expect(combined.onFailed).toBeUndefined();
  });
});
