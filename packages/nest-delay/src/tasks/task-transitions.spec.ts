import { WindowPolicy } from './window-policy.js';
import type { TaskRow } from './task-row.js';
import {
  charge,
  debounce,
  fail,
  hasAttemptsLeft,
  replace,
  reschedule,
  rescheduleEntity,
  revive,
  snooze,
  type TransitionRules,
} from './task-transitions.js';

const now = 1_000_000;
const MINUTE = 60_000;

function running(): WindowPolicy {
  const policy = new WindowPolicy({ windowMs: 10 * MINUTE, instanceId: 'me', leaseMs: 30_000 });
  policy.setHandledTypes(['mine']);
  policy.setRunning(true);
  return policy;
}

const rules = (policy = running()): TransitionRules => ({
  policy,
  backoffOf: () => ({ baseMs: MINUTE, maxMs: 60 * MINUTE, jitter: 0 }),
});

/** A task as its claim read it: `attempts` counts this one. */
function claimed(attempts: number, maxAttempts = 3): TaskRow {
  const at = new Date(now);
  return {
    id: '7',
    type: 'order.close',
    key: null,
    entity: null,
    payload: null,
    due_at: at,
    executed_at: at,
    cancelled_at: null,
    dead_at: null,
    attempts,
    max_attempts: maxAttempts,
    last_error: null,
    locked_by: 'me',
    created_at: at,
    updated_at: at,
  };
}

describe('task transitions', () => {
  it('one rule for attempts left: fewer started than allowed', () => {
    expect(hasAttemptsLeft({ attempts: 2, max_attempts: 3 })).toBe(true);
    expect(hasAttemptsLeft({ attempts: 3, max_attempts: 3 })).toBe(false);
  });

  it('a failure with attempts left retries after the backoff, leased here within the window', () => {
    expect(fail(claimed(1), 'boom', now, rules())).toMatchObject({
      transition: 'retry',
      dueAtMs: now + MINUTE,
      lockedBy: 'me',
      error: 'boom',
    });
    // The fourth of ten attempts backs off 8 minutes; past a 5-minute window it is left unleased.
    const narrow = new WindowPolicy({ windowMs: 5 * MINUTE, instanceId: 'me', leaseMs: 30_000 });
    narrow.setRunning(true);
    expect(fail(claimed(4, 10), 'boom', now, rules(narrow))).toMatchObject({
      transition: 'retry',
      dueAtMs: now + 8 * MINUTE,
      lockedBy: null,
    });
  });

  it('a failure of the last attempt exhausts the task', () => {
    expect(fail(claimed(3), 'boom', now, rules())).toMatchObject({
      transition: 'exhaust',
      reason: 'boom',
      attempts: 3,
    });
  });

  it('a snooze gives its attempt back, so snoozing never exhausts a task', () => {
    expect(snooze(claimed(3), 5 * MINUTE, now, running())).toMatchObject({
      transition: 'snooze',
      dueAtMs: now + 5 * MINUTE,
      attempts: 2,
      lockedBy: 'me',
    });
  });

  it('a charge counts the cut-off attempts, flags a retry, and exhausts when they used up the attempts', () => {
    // As the row is now: the cut-off claim's count rolled back with it.
    const before = { ...claimed(1), executed_at: null };
    expect(charge(before, 1, 'cut off', now, now, running())).toMatchObject({
      transition: 'retry',
      attempts: 2,
      times: 1,
      dueAtMs: now,
      lockedBy: 'me',
    });
    const exhausted = charge(before, 2, 'cut off', now, now, running());
    expect(exhausted).toMatchObject({ transition: 'exhaust', attempts: 3, times: 2 });
    expect(exhausted.transition === 'exhaust' && exhausted.reason).toMatch(
      /^cut off; out of attempts, dead-lettered without running it again$/,
    );
  });

  it("a reschedule or revive in the caller's transaction leases nothing; outside, per the window", () => {
    expect(reschedule(now + MINUTE, now, running(), true).lockedBy).toBeNull();
    expect(reschedule(now + MINUTE, now, running(), false).lockedBy).toBe('me');
    expect(reschedule(now + 11 * MINUTE, now, running(), false).lockedBy).toBeNull();
    expect(revive(now, running(), false)).toEqual({
      transition: 'revive',
      dueAtMs: now,
      lockedBy: 'me',
      // Its statement reads the type: leased here only if one of these.
      handledTypes: ['mine'],
    });
  });

  it('a keyed replace or debounce of a type not handled here leases nothing (issue 45)', () => {
    expect(replace(now + MINUTE, now, running(), false, 'mine').lockedBy).toBe('me');
    expect(replace(now + MINUTE, now, running(), false, 'theirs').lockedBy).toBeNull();
    expect(debounce(MINUTE, now, running(), false, 'mine').lockedBy).toBe('me');
    expect(debounce(MINUTE, now, running(), false, 'theirs').lockedBy).toBeNull();
  });

  it('a replace starts the attempts over and is leased as a new task of its due time would be', () => {
    expect(replace(now + MINUTE, now, running(), false)).toEqual({
      transition: 'replace',
      dueAtMs: now + MINUTE,
      lockedBy: 'me',
      attempts: 0,
    });
    expect(replace(now + 11 * MINUTE, now, running(), false).lockedBy).toBeNull();
    expect(replace(now + MINUTE, now, running(), true).lockedBy).toBeNull();
  });

  it('a charge of several cut-off attempts at once retries while they leave an attempt, else exhausts', () => {
    // Two orphaned notes found at once: 2 + 2 of 5 leaves one; 2 + 3 leaves none.
    const row = { ...claimed(2, 5), executed_at: null };
    expect(charge(row, 2, 'cut off', now + MINUTE, now, running())).toMatchObject({
      transition: 'retry',
      attempts: 4,
      times: 2,
      error: 'cut off',
    });
    expect(charge(row, 3, 'cut off', now + MINUTE, now, running())).toMatchObject({
      transition: 'exhaust',
      attempts: 5,
    });
  });
});

describe('reschedule-entity', () => {
  it('leases each moved task here when its new time is within the window, per row', () => {
    const action = rescheduleEntity({ byMs: 5 * MINUTE }, now, running(), false);
    expect(action).toEqual({
      transition: 'reschedule-entity',
      byMs: 5 * MINUTE,
      toMs: null,
      lockedBy: 'me',
      horizonMs: now + 10 * MINUTE,
      handledTypes: ['mine'],
    });
  });

  it("leases nothing in a caller's transaction, nor on an instance that is not running", () => {
    expect(rescheduleEntity({ toMs: now }, now, running(), true).lockedBy).toBeNull();
    const stopped = new WindowPolicy({ windowMs: 10 * MINUTE, instanceId: 'me', leaseMs: 30_000 });
    expect(rescheduleEntity({ toMs: now }, now, stopped, false).lockedBy).toBeNull();
  });
});
