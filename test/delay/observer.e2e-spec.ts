import type { DelayObserver } from 'nest-delay';
import { CapturingLogger, SECOND, useDelayTestApp } from './delay-test-app.js';

/** Every call the observer got, in order, as [hook, event]. */
const calls: Array<[string, any]> = [];
let throwFrom: string | undefined;

const observer: DelayObserver = Object.fromEntries(
  [
    'onScheduled',
    'onCancelled',
    'onExecuted',
    'onFailed',
    'onDeadLettered',
    'onSnoozed',
    'onClaim',
  ].map((hook) => [
    hook,
    (event: unknown) => {
      calls.push([hook, event]);
      if (throwFrom === hook) throw new Error(`observer ${hook} broke`);
    },
  ]),
);

const of = (hook: string) => calls.filter(([h]) => h === hook).map(([, event]) => event);

describe('DelayObserver', () => {
  const logger = new CapturingLogger();
  const fixture = useDelayTestApp(
    { observer, retry: { maxAttempts: 2, baseDelay: '1s', jitter: 0 } },
    { logger },
  );

  beforeEach(async () => {
    await fixture.t.quiesce();
    calls.length = 0;
    throwFrom = undefined;
  });

  it('hears a schedule, then its execution with its lateness and the claim, after commit', async () => {
    const { delay, tester } = fixture.t;
    const task = await delay.schedule({ type: 'test.effect', delay: '10s', key: 'obs-1' });
    expect(of('onScheduled')).toEqual([
      { id: task.id, type: 'test.effect', key: 'obs-1', dueAt: task.dueAt },
    ]);
    // A key already pending returns its task: nothing new was scheduled.
    await delay.schedule({ type: 'test.effect', delay: '20s', key: 'obs-1' });
    expect(of('onScheduled')).toHaveLength(1);

    // A second late (the clock stays on whole ticks, so the other tests' tasks fire).
    await tester.advance(11 * SECOND);
    const [executed] = of('onExecuted');
    expect(executed).toMatchObject({ id: task.id, type: 'test.effect', key: 'obs-1', attempt: 1 });
    // advance walks its span in due order: the task ran at its due time.
    expect(executed.latenessMs).toBe(0);
    expect(of('onClaim')).toEqual([
      expect.objectContaining({ requested: 1, claimed: 1, durationMs: expect.any(Number) }),
    ]);
  });

  it('hears a failed attempt with its retry time, then the dead letter', async () => {
    const { delay, tester } = fixture.t;
    const task = await delay.schedule({ type: 'test.always-fails', delay: 0 });
    await tester.runDue();
    expect(of('onFailed')).toEqual([
      expect.objectContaining({
        id: task.id,
        attempt: 1,
        error: 'Error: this handler always fails',
        retryAt: expect.any(Date),
      }),
    ]);
    await tester.advance('1s');
    expect(of('onDeadLettered')).toEqual([
      expect.objectContaining({
        id: task.id,
        attempt: 2,
        reason: 'Error: this handler always fails',
      }),
    ]);
  });

  it('hears a write in a caller transaction only when it commits, and never when it rolls back', async () => {
    const { delay, dataSource } = fixture.t;
    let inside = -1;
    await dataSource.transaction(async (manager) => {
      await delay.schedule({ type: 'test.effect', delay: '1h', key: 'obs-tx' }, { manager });
      inside = of('onScheduled').length;
    });
    expect(inside).toBe(0);
    expect(of('onScheduled')).toEqual([expect.objectContaining({ key: 'obs-tx' })]);

    await expect(
      dataSource.transaction(async (manager) => {
        await delay.schedule({ type: 'test.effect', delay: '1h', key: 'obs-rolled' }, { manager });
        await delay.cancel({ key: 'obs-tx' }, { manager });
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(of('onScheduled')).toHaveLength(1);
    expect(of('onCancelled')).toHaveLength(0);

    // A savepoint rolled back undoes only what was written inside it.
    await dataSource.transaction(async (manager) => {
      await delay.cancel({ key: 'obs-tx' }, { manager });
      const runner = manager.queryRunner!;
      await runner.startTransaction();
      await delay.schedule({ type: 'test.effect', delay: '1h', key: 'obs-inner' }, { manager });
      await runner.rollbackTransaction();
    });
    expect(of('onCancelled')).toEqual([expect.objectContaining({ key: 'obs-tx' })]);
    expect(of('onScheduled').map((e) => e.key)).toEqual(['obs-tx']);
  });

  it('hears every task of scheduleMany', async () => {
    const { delay } = fixture.t;
    const results = await delay.scheduleMany([
      { type: 'test.effect', delay: '1h', key: 'many-a' },
      { type: 'test.effect', delay: '1h' },
      { type: 'test.effect', delay: '1h', key: 'many-a' },
    ]);
    expect(of('onScheduled').map((e) => e.id)).toEqual(results.slice(0, 2).map((r) => r.id));
  });

  it('logs an observer that throws and runs the task and the schedule regardless', async () => {
    const { delay, tester, effects } = fixture.t;
    throwFrom = 'onScheduled';
    const task = await delay.schedule({ type: 'test.effect', delay: 0 });
    throwFrom = 'onExecuted';
    const report = await tester.runDue();
    expect(report.executed).toBe(1);
    expect(await effects(task.id)).toBe(1);
    expect((await delay.get({ id: task.id }))?.state).toBe('executed');
    const errors = logger.messages('error');
    expect(errors).toContain(
      'DelayObserver.onScheduled threw, ignored: Error: observer onScheduled broke',
    );
    expect(errors).toContain(
      'DelayObserver.onExecuted threw, ignored: Error: observer onExecuted broke',
    );
  });

  it('reports its lease and what it holds in stats(), from memory', async () => {
    const { delay, clock } = fixture.t;
    await delay.schedule({ type: 'test.effect', delay: '5m' });
    const stats = delay.stats();
    expect(stats.running).toBe(true);
    expect(stats.held).toBe(1);
    expect(stats.lease.live).toBe(true);
    expect(stats.lease.expiresAt!.getTime()).toBeGreaterThan(clock.now());
    // A clock past the lease, the heartbeat it set off not back yet: not live.
    clock.advance(31 * SECOND);
    expect(delay.stats().lease.live).toBe(false);
    await fixture.t.tester.refresh();
    expect(delay.stats().lease.live).toBe(true);
    expect(delay.stats().lease.expiresAt!.getTime()).toBe(clock.now() + 30 * SECOND);
  });
});
