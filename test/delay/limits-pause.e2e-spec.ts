import { Injectable, Module } from '@nestjs/common';
import { DelayLimits, DelayedTaskHandler, type ClaimEvent } from 'nest-delay';
import { SECOND, useDelayTestApp, type DelayTestApp } from './delay-test-app.js';

const started: number[] = [];

@Injectable()
class PausedHandlers {
  @DelayedTaskHandler('paused.task')
  run(payload: { n: number }) {
    started.push(payload.n);
  }

  @DelayedTaskHandler('limited.task', { limit: { concurrency: 1, key: (p: { k: string }) => p.k } })
  limited(payload: { n: number }) {
    started.push(payload.n);
  }
}

/** Every claim transaction, as the observer hears of it. */
const claims: ClaimEvent[] = [];

@Module({ providers: [PausedHandlers] })
class PausedModule {}

// One claim at a time, so the order handlers start in is the order they were claimed in.
const app = useDelayTestApp(
  { instanceId: 'limits-pause', concurrency: 1, observer: { onClaim: (e) => claims.push(e) } },
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

describe('a task of a limited type', () => {
  // The dispatcher knows its type from the wheel and sends it to the gate, whose claim is its
  // only one: no claim transaction takes it (an attempt note, a row lock) only to hand it back.
  it('is claimed once, by its line: every claim transaction claims what it was given', async () => {
    started.length = 0;
    claims.length = 0;
    const base = t.clock.now();
    for (let n = 0; n < 4; n++)
      await t.delay.schedule({
        type: 'limited.task',
        payload: { n, k: n % 2 ? 'odd' : 'even' },
        runAt: base + SECOND + n,
      });
    await t.tester.advance(2 * SECOND);
    await t.tester.runDue();
    expect(started.sort()).toEqual([0, 1, 2, 3]);
    expect(claims.length).toBeGreaterThan(0);
    expect(claims.filter((claim) => claim.claimed !== claim.requested)).toEqual([]);
    expect(claims.reduce((sum, claim) => sum + claim.claimed, 0)).toBe(4);
    const [{ attempts }] = await t.query<{ attempts: number }>(
      `SELECT sum(attempts)::int AS attempts FROM delayed_task WHERE type = 'limited.task'`,
    );
    expect(attempts).toBe(4);
  });

  // A pause this instance has not read yet (written by another instance): the claim statement
  // finds it in the database and leaves the task to the gate, which waits for the resume.
  it("of a type paused behind this instance's back never starts, and runs once on resume", async () => {
    const limits = t.moduleRef.get(DelayLimits);
    started.length = 0;
    await t.query(`UPDATE delay_type_limit SET paused_at = now() WHERE type = 'paused.task'`);
    const base = t.clock.now();
    await t.delay.schedule({ type: 'paused.task', payload: { n: 7 }, runAt: base + SECOND });
    await t.tester.advance(2 * SECOND);
    expect(started).toEqual([]);
    expect(await limits.get('paused.task')).toMatchObject({ paused: true, waiting: 1 });
    await limits.resume('paused.task');
    await t.tester.runDue();
    expect(started).toEqual([7]);
  });
});
