import { jest } from '@jest/globals';
import fc from 'fast-check';

/** A claim the fake runner holds until the test ends it. */
interface FakeClaim {
  ids: string[];
  alone: boolean;
  end(): void;
}

/** Stands in for ClaimRunner: no connection, each claim in flight until the test ends it. */
class FakeClaimRunner {
  readonly stats = {};
  readonly inFlight: FakeClaim[] = [];
  readonly claimed: string[] = [];
  mostInFlight = 0;
  /** A claim alone was launched while another was in flight, or one was launched beside it. */
  aloneShared = false;

  constructor() {
    runners.push(this);
  }

  run(ids: string[], alone: boolean): Promise<undefined> {
    if (this.inFlight.some((claim) => claim.alone) || (alone && this.inFlight.length > 0))
      this.aloneShared = true;
    return new Promise((resolve) => {
      const claim: FakeClaim = {
        ids,
        alone,
        end: () => {
          this.inFlight.splice(this.inFlight.indexOf(claim), 1);
          resolve(undefined);
        },
      };
      this.inFlight.push(claim);
      this.claimed.push(...ids);
      this.mostInFlight = Math.max(this.mostInFlight, this.inFlight.length);
    });
  }

  limitNowMs(): null {
    return null;
  }

  async cutOffAll(): Promise<void> {}
}

const runners: FakeClaimRunner[] = [];
jest.unstable_mockModule('./claim-runner.js', () => ({ ClaimRunner: FakeClaimRunner }));
const { Dispatcher } = await import('./dispatcher.js');
type DelayContext = ConstructorParameters<typeof Dispatcher>[0];
type HandlerRegistry = ConstructorParameters<typeof Dispatcher>[1];
type TaskWheel = ConstructorParameters<typeof Dispatcher>[2];

/** A dispatcher over the fake runner, with no limited types (its gate stays empty). */
function dispatcherWith(concurrency: number, batchSize: number) {
  const ctx = {
    concurrency,
    options: { batchSize, shutdownTimeoutMs: 1_000, instanceId: 'here', tickMs: 100 },
    clock: { now: () => 0 },
    logger: { warn: () => {}, error: () => {} },
    tracing: undefined,
  } as unknown as DelayContext;
  const registry = {
    limitOf: () => undefined,
    types: () => [],
  } as unknown as HandlerRegistry;
  const dispatcher = new Dispatcher(ctx, registry, {} as TaskWheel);
  return { dispatcher, runner: runners[runners.length - 1] };
}

/** Lets a claim's end reach the dispatcher (its promise's callbacks). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

const ids = (from: number, count: number) =>
  Array.from({ length: count }, (_, i) => String(from + i));

describe('Dispatcher', () => {
  it('runs `concurrency` claims at once while ids wait, never more', async () => {
    const { dispatcher, runner } = dispatcherWith(3, 2);
    dispatcher.enqueue(ids(1, 20));
    expect(runner.inFlight).toHaveLength(3);
    while (runner.inFlight.length > 0) {
      runner.inFlight[0].end();
      await settle();
      // Each claim that ends is replaced at once while ids wait.
      if (dispatcher.queuedCount > 0) expect(runner.inFlight).toHaveLength(3);
    }
    expect(runner.mostInFlight).toBe(3);
    expect([...runner.claimed].sort()).toEqual(ids(1, 20).sort());
  });

  it('gives each id fired on its own a claim of its own while workers are free', () => {
    const { dispatcher, runner } = dispatcherWith(4, 50);
    for (const id of ids(1, 5)) dispatcher.enqueue([id]);
    expect(runner.inFlight.map((claim) => claim.ids)).toEqual([['1'], ['2'], ['3'], ['4']]);
    expect(dispatcher.queuedCount).toBe(1);
  });

  it('claims ids fired together in one claim, up to batchSize, while workers are free', () => {
    const { dispatcher, runner } = dispatcherWith(4, 3);
    dispatcher.enqueue(ids(1, 3));
    expect(runner.inFlight.map((claim) => claim.ids)).toEqual([['1', '2', '3']]);
    dispatcher.enqueue(ids(4, 2));
    expect(runner.inFlight.map((claim) => claim.ids)).toEqual([['1', '2', '3'], ['4', '5']]);
  });

  it('runs a task that may only run alone once the claims in flight end, and nothing beside it', async () => {
    const { dispatcher, runner } = dispatcherWith(3, 1);
    dispatcher.enqueue(ids(1, 2));
    dispatcher.queueAlone('alone');
    dispatcher.enqueue(ids(3, 2));
    expect(runner.inFlight.map((claim) => claim.ids)).toEqual([['1'], ['2']]);
    runner.inFlight[0].end();
    await settle();
    expect(runner.inFlight).toHaveLength(1);
    runner.inFlight[0].end();
    await settle();
    expect(runner.inFlight.map((claim) => claim.ids)).toEqual([['alone']]);
    runner.inFlight[0].end();
    await settle();
    expect(runner.inFlight.map((claim) => claim.ids)).toEqual([['3'], ['4']]);
    expect(runner.aloneShared).toBe(false);
  });

  it('whatever fires and ends when: at most `concurrency` claims, a claim alone by itself, no worker idle while ids wait, every id claimed', async () => {
    type Step = { kind: 'fire'; count: number } | { kind: 'alone' } | { kind: 'end'; pick: number };
    const step: fc.Arbitrary<Step> = fc.oneof(
      fc.record({ kind: fc.constant('fire' as const), count: fc.integer({ min: 1, max: 12 }) }),
      fc.constant({ kind: 'alone' as const }),
      fc.record({ kind: fc.constant('end' as const), pick: fc.nat() }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 6 }),
        fc.array(step, { maxLength: 40 }),
        async (concurrency, batchSize, steps) => {
          const { dispatcher, runner } = dispatcherWith(concurrency, batchSize);
          const fired: string[] = [];
          let next = 1;
          const check = () => {
            expect(runner.inFlight.length).toBeLessThanOrEqual(concurrency);
            expect(runner.aloneShared).toBe(false);
            // A task alone, in flight or waiting for the others to end, holds the rest back.
            const claimed = new Set(runner.claimed);
            const alone =
              runner.inFlight.some((claim) => claim.alone) ||
              fired.some((id) => id.startsWith('alone') && !claimed.has(id));
            if (dispatcher.queuedCount > 0 && !alone)
              expect(runner.inFlight).toHaveLength(concurrency);
          };
          for (const s of steps) {
            if (s.kind === 'fire') {
              const batch = ids(next, s.count);
              next += s.count;
              fired.push(...batch);
              dispatcher.enqueue(batch);
            } else if (s.kind === 'alone') {
              const id = `alone-${next++}`;
              fired.push(id);
              dispatcher.queueAlone(id);
            } else if (runner.inFlight.length > 0) {
              runner.inFlight[s.pick % runner.inFlight.length].end();
              await settle();
            }
            check();
          }
          while (runner.inFlight.length > 0) {
            runner.inFlight[0].end();
            await settle();
            check();
          }
          expect(dispatcher.idle).toBe(true);
          expect([...runner.claimed].sort()).toEqual([...fired].sort());
        },
      ),
    );
  });
});
