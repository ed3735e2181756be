import { Logger } from '@nestjs/common';
import type { ResolvedDelayOptions } from '../delay.options.js';
import { ManualClock } from '../testing/manual-clock.js';
import type { DelayContext } from '../context/delay-context.js';
import { TaskWheel } from './task-wheel.js';
import { WindowPolicy } from '../tasks/window-policy.js';

describe('TaskWheel', () => {
  function setup() {
    const clock = new ManualClock(1_000_000);
    const options = { slots: 60, tickMs: 1000, windowMs: 60_000, instanceId: 'me', leaseMs: 30_000 };
    const policy = new WindowPolicy(options);
    policy.setRunning(true);
    const ctx = {
      clock,
      options: options as unknown as ResolvedDelayOptions,
      policy,
      logger: new Logger('test'),
    } as unknown as DelayContext;
    const fired: string[] = [];
    const types: Array<string | undefined> = [];
    const wheel = new TaskWheel(ctx, (tasks) => {
      fired.push(...tasks.map((task) => task.id));
      types.push(...tasks.map((task) => task.type));
    });
    return { clock, wheel, fired, types };
  }

  // Decimal ids are keyed as numbers inside; what goes out must be the very id that came in.
  it('fires each task under the id it was held with, decimal or not', async () => {
    const { clock, wheel, fired } = setup();
    await wheel.start();
    const ids = ['42', '0', '007', '-5', '1e3', '9007199254740993', 'review-1', '12345678901234'];
    ids.forEach((id, i) => wheel.hold(id, 1_002_000 + i));
    expect(wheel.size).toBe(ids.length);
    expect(ids.every((id) => wheel.has(id))).toBe(true);
    expect(wheel.has('42.0')).toBe(false);
    wheel.drop('007');
    expect(wheel.has('007')).toBe(false);
    expect(wheel.has('7')).toBe(false);
    clock.advance(10_000);
    expect(fired).toEqual(ids.filter((id) => id !== '007'));
    await wheel.stop();
  });

  it('holdNoLaterThan moves a decimal id earlier, never later', async () => {
    const { clock, wheel, fired } = setup();
    await wheel.start();
    wheel.hold('10', 1_005_000);
    wheel.holdNoLaterThan('10', 1_009_000, 'x');
    wheel.holdNoLaterThan('10', 1_002_000, 'x');
    clock.advance(2_000);
    expect(fired).toEqual(['10']);
    await wheel.stop();
  });

  // The dispatcher routes a fired task by its type: a hold that knows none keeps the one held.
  it('fires each task with the type it was held with, kept by a hold that names none', async () => {
    const { clock, wheel, fired, types } = setup();
    await wheel.start();
    wheel.hold('1', 1_002_000, 'a');
    wheel.hold('1', 1_003_000);
    wheel.hold('2', 1_003_000, 'b');
    wheel.hold('3', 1_003_500);
    clock.advance(5_000);
    expect(fired).toEqual(['1', '2', '3']);
    expect(types).toEqual(['a', 'b', undefined]);
    await wheel.stop();
  });
});
