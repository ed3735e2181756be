import { Injectable, Module } from '@nestjs/common';
import {
  DelayLimits,
  DelayValidationError,
  DelayedTaskHandler,
  UnknownTaskTypeError,
  type TaskContext,
} from 'nest-delay';
import { SECOND, useDelayTestApp, type DelayTestApp } from './delay-test-app.js';

/** The order each handler started in, with the simulated time. */
const started: Array<{ type: string; n: number; at: number; key: string }> = [];
/** While set, `limited.one` handlers wait on it: to hold a slot. */
let gate: Promise<void> | undefined;

@Injectable()
class LimitHandlers {
  @DelayedTaskHandler('limited.rate', { limit: { rate: { starts: 2, per: '1m' } } })
  rate(payload: { n: number }, context: TaskContext) {
    started.push({ type: 'limited.rate', n: payload.n, at: Date.now(), key: '' });
    void context;
  }

  @DelayedTaskHandler('limited.one', {
    limit: { concurrency: 1, key: (payload: { shop: string }) => payload.shop },
  })
  async one(payload: { n: number; shop: string }) {
    started.push({ type: 'limited.one', n: payload.n, at: Date.now(), key: payload.shop });
    await gate;
  }

  @DelayedTaskHandler('limited.none')
  none(payload: { n: number }) {
    started.push({ type: 'limited.none', n: payload.n, at: Date.now(), key: '' });
  }
}

@Module({ providers: [LimitHandlers] })
class LimitModule {}

const app = useDelayTestApp(
  { instanceId: 'limits-sim', concurrency: 4 },
  { modules: [{ module: LimitModule }] },
);
let t: DelayTestApp;
let limits: DelayLimits;

beforeAll(() => {
  t = app.t;
  limits = t.moduleRef.get(DelayLimits);
});

beforeEach(async () => {
  started.length = 0;
  await t.quiesce();
});

const ofType = (type: string) => started.filter((s) => s.type === type).map((s) => s.n);

describe('a rate limit in simulated time', () => {
  it('starts at most `starts` per window, the rest when credits free, uncharged and in due order', async () => {
    const base = t.clock.now();
    for (let n = 0; n < 5; n++)
      await t.delay.schedule({
        type: 'limited.rate',
        payload: { n },
        runAt: base + (n + 1) * SECOND,
      });
    const seen: number[][] = [];
    for (let s = 1; s <= 5; s++) {
      await t.tester.advanceTo(base + s * SECOND);
      seen.push(ofType('limited.rate'));
    }
    // Two starts in any minute: 0 and 1, then nothing until a minute after 0's start.
    expect(seen).toEqual([[0], [0, 1], [0, 1], [0, 1], [0, 1]]);
    await t.tester.advanceTo(base + 61 * SECOND - 1);
    expect(ofType('limited.rate')).toEqual([0, 1]);
    await t.tester.advanceTo(base + 61 * SECOND);
    expect(ofType('limited.rate')).toEqual([0, 1, 2]);
    await t.tester.advanceTo(base + 62 * SECOND);
    expect(ofType('limited.rate')).toEqual([0, 1, 2, 3]);
    await t.tester.advanceTo(base + 121 * SECOND);
    expect(ofType('limited.rate')).toEqual([0, 1, 2, 3, 4]);
    const rows = await t.query<{ attempts: number }>(
      `SELECT attempts FROM delayed_task WHERE type = 'limited.rate' AND executed_at IS NOT NULL`,
    );
    expect(rows.map((row) => row.attempts)).toEqual([1, 1, 1, 1, 1]);
  });
});

describe('a rate limit in one advance', () => {
  it('runs each start whose credit frees within the span, at the instant it frees', async () => {
    // Past the window of any earlier test's starts: every credit is free.
    await t.tester.advance('2m');
    const base = t.clock.now();
    const tasks = [];
    for (let n = 0; n < 5; n++)
      tasks.push(
        await t.delay.schedule({ type: 'limited.rate', payload: { n }, runAt: base + SECOND }),
      );
    await t.tester.advance('3m');
    const ran = await Promise.all(tasks.map((task) => t.delay.get({ id: task.id })));
    // Two a minute: two at once, two when the first credits free, the last a minute later.
    expect(ran.map((task) => task!.executedAt!.getTime() - base)).toEqual([
      SECOND,
      SECOND,
      61 * SECOND,
      61 * SECOND,
      121 * SECOND,
    ]);
  });
});

describe('a concurrency limit per key', () => {
  it('runs one task of a shop at a time, the next in due order, and the other shops beside it', async () => {
    let open!: () => void;
    gate = new Promise<void>((resolve) => (open = resolve));
    try {
      const base = t.clock.now();
      for (const [n, at] of [
        [0, 1],
        [1, 2],
        [2, 3],
      ])
        await t.delay.schedule({
          type: 'limited.one',
          payload: { n, shop: 'a' },
          runAt: base + at * SECOND,
        });
      await t.delay.schedule({
        type: 'limited.one',
        payload: { n: 10, shop: 'b' },
        runAt: base + 3 * SECOND,
      });
      // a0 starts and holds shop a's one slot; a1, a2 come due behind it, b10 beside it.
      t.clock.advance(SECOND);
      void t.tester.runDue();
      await until(() => started.length === 1);
      t.clock.advance(2 * SECOND);
      void t.tester.runDue();
      await until(() => started.length === 2);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(started.map((s) => `${s.key}${s.n}`)).toEqual(['a0', 'b10']);
    } finally {
      gate = undefined;
      open();
    }
    await t.tester.runDue();
    expect(started.map((s) => `${s.key}${s.n}`)).toEqual(['a0', 'b10', 'a1', 'a2']);
  });
});

async function until(check: () => boolean) {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  if (!check()) throw new Error('timed out');
}

describe('limits set at run time', () => {
  it('replaces the declared limit, is listed, and goes back to the declared on reset', async () => {
    const set = await limits.set('limited.none', { rate: { starts: 1, per: '1h' } });
    expect(set).toMatchObject({
      declared: null,
      override: { concurrency: null, rate: { starts: 1, perMs: 3_600_000 } },
      effective: { concurrency: null, rate: { starts: 1, perMs: 3_600_000 } },
    });
    const base = t.clock.now();
    for (let n = 0; n < 3; n++)
      await t.delay.schedule({
        type: 'limited.none',
        payload: { n },
        runAt: base + (n + 1) * SECOND,
      });
    for (let s = 1; s <= 3; s++) await t.tester.advanceTo(base + s * SECOND);
    expect(ofType('limited.none')).toEqual([0]);
    await limits.reset('limited.none');
    await t.tester.runDue();
    // Unlimited again, they go to the claims (four at once here) together.
    expect(ofType('limited.none').sort()).toEqual([0, 1, 2]);
    const listed = (await limits.list()).find((info) => info.type === 'limited.rate');
    expect(listed).toMatchObject({
      declared: { concurrency: null, rate: { starts: 2, perMs: 60_000 } },
      override: null,
      perKey: false,
    });
  });

  it('refuses what it cannot keep, naming it, and changes nothing', async () => {
    await expect(limits.set('limited.none', { concurrency: 0 })).rejects.toThrow(
      DelayValidationError,
    );
    await expect(limits.set('limited.none', { concurrency: 0 })).rejects.toThrow(
      /limit\.concurrency must be an integer from 1/,
    );
    await expect(
      limits.set('limited.none', { rate: { starts: 5, per: 'soon' as never } }),
    ).rejects.toThrow(/limit\.rate\.per must be/);
    await expect(limits.set('limited.none', {})).rejects.toThrow(/must set concurrency or rate/);
    await expect(limits.pause('no.such.type')).rejects.toThrow(UnknownTaskTypeError);
    expect((await limits.get('limited.none')).override).toBeNull();
  });
});
