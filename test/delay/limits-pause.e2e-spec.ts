import { Injectable, Module } from '@nestjs/common';
import { DelayLimits, DelayedTaskHandler } from 'nest-delay';
import { SECOND, useDelayTestApp, type DelayTestApp } from './delay-test-app.js';

const started: number[] = [];

@Injectable()
class PausedHandlers {
  @DelayedTaskHandler('paused.task')
  run(payload: { n: number }) {
    started.push(payload.n);
  }
}

@Module({ providers: [PausedHandlers] })
class PausedModule {}

// One claim at a time, so the order handlers start in is the order they were claimed in.
const app = useDelayTestApp(
  { instanceId: 'limits-pause', concurrency: 1 },
  { modules: [{ module: PausedModule }] },
);
let t: DelayTestApp;

beforeAll(() => {
  t = app.t;
});

describe('pause and resume', () => {
  it('holds every task of a paused type, due times unchanged, and runs them on resume in due order, each once', async () => {
    const limits = t.moduleRef.get(DelayLimits);
    await limits.pause('paused.task');
    const base = t.clock.now();
    for (let n = 0; n < 6; n++)
      await t.delay.schedule({
        type: 'paused.task',
        payload: { n },
        runAt: base + (6 - n) * SECOND,
      });
    await t.tester.advance(10 * SECOND);
    expect(started).toEqual([]);
    expect(await limits.get('paused.task')).toMatchObject({
      paused: true,
      waiting: 6,
      effective: null,
    });
    const due = await t.query<{ due_at: Date }>(
      `SELECT due_at FROM delayed_task WHERE type = 'paused.task' ORDER BY id`,
    );
    expect(due.map((row) => row.due_at.getTime())).toEqual(
      [6, 5, 4, 3, 2, 1].map((s) => base + s * SECOND),
    );

    await limits.resume('paused.task');
    await t.tester.runDue();
    expect(started).toEqual([5, 4, 3, 2, 1, 0]);
    expect(await limits.get('paused.task')).toMatchObject({ paused: false, waiting: 0 });
    const [{ runs }] = await t.query<{ runs: number }>(
      `SELECT count(*)::int AS runs FROM delayed_task WHERE type = 'paused.task' AND executed_at IS NOT NULL AND attempts = 1`,
    );
    expect(runs).toBe(6);
  });

  it('pauses a type already waiting in the gate of a limit, and a pause survives a reset of the limits', async () => {
    const limits = t.moduleRef.get(DelayLimits);
    started.length = 0;
    await limits.set('paused.task', { concurrency: 1 });
    await limits.pause('paused.task');
    await limits.reset('paused.task');
    const base = t.clock.now();
    await t.delay.schedule({ type: 'paused.task', payload: { n: 1 }, runAt: base + SECOND });
    await t.tester.advance(2 * SECOND);
    expect(started).toEqual([]);
    await limits.resume('paused.task');
    await t.tester.runDue();
    expect(started).toEqual([1]);
  });
});
