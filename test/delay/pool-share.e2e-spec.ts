import { describeWithServer } from '../support/test-database.js';
import { useDelayTestApp } from './delay-test-app.js';

// A backlog whose handlers all hang holds every claim's connection; the
// app's own transactions (an HTTP request's) must still find connections:
// by default the claims take at most half the pool (10 here).
describeWithServer('the pool the app shares with the claims', () => {
  const app = useDelayTestApp({ batchSize: 1 });

  it("leaves half of it to the app's own transactions while every claim is busy", async () => {
    const t = app.t;
    let release!: () => void;
    const hang = new Promise<void>((resolve) => (release = resolve));
    let running = 0;
    t.behaviour.afterEffect = async () => {
      running++;
      await hang;
    };
    await t.delay.scheduleMany(
      Array.from({ length: 40 }, () => ({ type: 'test.effect', delay: 0 })),
    );
    const draining = t.tester.runDue();
    const { concurrency } = t.delay['runtime'].ctx;
    expect(concurrency).toBe(5);
    while (running < concurrency) await new Promise((resolve) => setTimeout(resolve, 5));

    // Four transactions of the app, each holding its connection until all four have one.
    let started = 0;
    let allStarted!: () => void;
    const barrier = new Promise<void>((resolve) => (allStarted = resolve));
    const transactions = Array.from({ length: 4 }, () =>
      t.dataSource.transaction(async (manager) => {
        await manager.query('SELECT 1');
        if (++started === 4) allStarted();
        await barrier;
        return manager.query('SELECT count(*)::int AS n FROM delayed_task');
      }),
    );
    // They finish while the claims still hang: none waited for a claim's connection.
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      Promise.all(transactions).then(() => 'finished'),
      new Promise((resolve) => {
        timer = setTimeout(() => resolve('waited behind the claims'), 10_000);
      }),
    ]);
    clearTimeout(timer);
    expect(outcome).toBe('finished');
    expect(running).toBe(concurrency);

    release();
    await draining;
    expect(t.behaviour.calls).toBe(40);
  });
});
