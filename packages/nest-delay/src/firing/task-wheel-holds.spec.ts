import { Logger } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { ResolvedDelayOptions } from '../delay.options.js';
import type { DelayContext } from '../context/delay-context.js';
import type { AfterCommit } from '../observer/after-commit.js';
import { ManualClock } from '../testing/manual-clock.js';
import type { TaskRow } from '../tasks/task-row.js';
import type { Fate } from '../tasks/task-transitions.js';
import { WindowPolicy } from '../tasks/window-policy.js';
import { followCancel, followFate, followWrite, TaskWheel } from './task-wheel.js';

describe('which tasks the wheel holds (firing/holds)', () => {
  function setup() {
    const clock = new ManualClock(1_000_000);
    const options = { slots: 60, tickMs: 1000, windowMs: 60_000, instanceId: 'me', leaseMs: 30_000 };
    const policy = new WindowPolicy(options);
    policy.setRunning(true);
    policy.setHandledTypes(['mine']);
    // A caller's transaction, committed by hand: what AfterCommit runs at its commit.
    const atCommit: (() => void)[] = [];
    const afterCommit = {
      run: (manager: EntityManager | undefined, run: () => void) =>
        manager ? atCommit.push(run) : run(),
    } as unknown as AfterCommit;
    const ctx = {
      clock,
      options: options as unknown as ResolvedDelayOptions,
      policy,
      afterCommit,
      logger: new Logger('test'),
    } as unknown as DelayContext;
    const wheel = new TaskWheel(ctx, () => undefined);
    const commit = () => atCommit.splice(0).forEach((run) => run());
    return { clock, ctx, wheel, commit };
  }
  const manager = {} as EntityManager;
  const row = (over: Partial<TaskRow>): TaskRow =>
    ({
      id: '1',
      type: 'mine',
      due_at: new Date(1_010_000),
      locked_by: 'me',
      executed_at: null,
      cancelled_at: null,
      dead_at: null,
      ...over,
    }) as TaskRow;

  it('holds a pending task leased here, and lets go of one leased elsewhere or finished', () => {
    const { ctx, wheel } = setup();
    followWrite(wheel, ctx, row({}), undefined);
    expect(wheel.has('1')).toBe(true);
    followWrite(wheel, ctx, row({ locked_by: 'other' }), undefined);
    expect(wheel.has('1')).toBe(false);
    followWrite(wheel, ctx, row({ id: '2' }), undefined);
    followWrite(wheel, ctx, row({ id: '2', executed_at: new Date() }), undefined);
    // A finished row says nothing about the wheel: its claim let it go.
    expect(wheel.has('2')).toBe(true);
  });

  it('never holds a type with no handler here, even leased here', () => {
    const { ctx, wheel } = setup();
    followWrite(wheel, ctx, row({ type: 'theirs' }), undefined);
    expect(wheel.has('1')).toBe(false);
  });

  it("holds a task written in a caller's transaction early, and again at its commit", () => {
    const { ctx, wheel, commit } = setup();
    followWrite(wheel, ctx, row({ locked_by: null }), manager);
    expect(wheel.has('1')).toBe(true);
    // Fired before the commit, its claim found no row and let it go.
    wheel.drop('1');
    commit();
    expect(wheel.has('1')).toBe(true);
  });

  it("leaves the wheel alone for a cancel in a caller's transaction, which may roll back", () => {
    const { ctx, wheel } = setup();
    followWrite(wheel, ctx, row({}), undefined);
    followCancel(wheel, '1', manager);
    expect(wheel.has('1')).toBe(true);
    followCancel(wheel, '1', undefined);
    expect(wheel.has('1')).toBe(false);
  });

  it('follows a fate: pending again and leased here is held; one leased elsewhere is not', () => {
    const { ctx, wheel } = setup();
    const retry = (lockedBy: string | null) =>
      ({ transition: 'retry', row: row({}), dueAtMs: 1_020_000, lockedBy }) as unknown as Fate;
    followFate(wheel, ctx, retry(null));
    expect(wheel.has('1')).toBe(false);
    followFate(wheel, ctx, retry('me'));
    expect(wheel.has('1')).toBe(true);
  });

  it('a fate lets go of nothing a write of this instance held again while its claim ran (issue 45)', () => {
    const { ctx, wheel } = setup();
    // Fired, so out of the wheel; its claim runs its last attempt, which fails.
    // A revive here waited for the claim's lock, committed after it, and its
    // reply was read first: pending, leased here, due now, held.
    followWrite(wheel, ctx, row({ due_at: new Date(1_000_000) }), undefined);
    followFate(wheel, ctx, { transition: 'exhaust', row: row({}) } as unknown as Fate);
    expect(wheel.has('1')).toBe(true);
    // The same for a retry past the window (nobody's), and for a discard.
    followFate(wheel, ctx, {
      transition: 'retry',
      row: row({}),
      dueAtMs: 2_000_000,
      lockedBy: null,
    } as unknown as Fate);
    followFate(wheel, ctx, { transition: 'discard', row: row({}) } as unknown as Fate);
    expect(wheel.has('1')).toBe(true);
  });
});
