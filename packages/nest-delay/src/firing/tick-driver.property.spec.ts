import fc from 'fast-check';
import { ManualClock } from '../testing/manual-clock.js';
import { DueQueue, TimingWheel, type EntryId } from '../wheel/index.js';
import { TickDriver } from './task-wheel.js';

/**
 * The firing path as TaskWheel drives it (wheel, due queue, driver, timers
 * of a ManualClock), against the contract: after the clock moves, exactly the
 * live entries due by then have fired, each once, none before its due time,
 * earliest first within a batch.
 */
describe('TickDriver against its contract', () => {
  it('fires every entry at its due time to the millisecond (or at once if added due), never before', () => {
    fc.assert(
      fc.property(
        fc.record({ tickMs: fc.constantFrom(1, 7, 10, 1000), slots: fc.constantFrom(8, 16) }),
        fc.array(
          fc.oneof(
            {
              weight: 5,
              arbitrary: fc.record({
                kind: fc.constant('add' as const),
                id: fc.integer({ min: 0, max: 30 }),
                offsetMs: fc.integer({ min: -50, max: 40_000 }),
              }),
            },
            {
              weight: 2,
              arbitrary: fc.record({
                kind: fc.constant('cancel' as const),
                id: fc.integer({ min: 0, max: 30 }),
              }),
            },
            {
              weight: 4,
              arbitrary: fc.record({
                kind: fc.constant('advance' as const),
                byMs: fc.oneof(
                  fc.integer({ min: 0, max: 20 }),
                  fc.integer({ min: 0, max: 30_000 }),
                ),
              }),
            },
          ),
          { maxLength: 80 },
        ),
        ({ tickMs, slots }, script) => {
          const clock = new ManualClock(1_000_003);
          const wheel = new TimingWheel<undefined>({ tickMs, slots, startMs: clock.now() });
          const queue = new DueQueue<undefined>();
          const fired: { id: EntryId; dueAtMs: number; at: number }[] = [];
          const driver = new TickDriver({
            wheel,
            queue,
            clock,
            // Catch-ups yield between batches; here every move is handled within it.
            maxTicksPerBatch: 1_000_000,
            onDue: (entries) => {
              for (const { id, dueAtMs } of entries) fired.push({ id, dueAtMs, at: clock.now() });
            },
          });
          const model = new Map<number, number>();
          const addedAt = new Map<number, number>();
          driver.start();

          for (const op of script) {
            if (op.kind === 'add') {
              const dueAtMs = clock.now() + op.offsetMs;
              queue.cancel(op.id);
              wheel.add(op.id, dueAtMs, undefined);
              driver.poke(dueAtMs);
              model.set(op.id, dueAtMs);
              addedAt.set(op.id, clock.now());
            } else if (op.kind === 'cancel') {
              if (!wheel.cancel(op.id)) queue.cancel(op.id);
              model.delete(op.id);
            } else {
              fired.length = 0;
              // Time passes through every deadline the driver asked for, as it would for real.
              const target = clock.now() + op.byMs;
              for (
                let wakes = 0;
                clock.nextTimerAt !== undefined && clock.nextTimerAt <= target;
                wakes++
              ) {
                // A driver that re-arms for a time that has passed would spin here.
                expect(wakes).toBeLessThan(1_000);
                clock.set(Math.max(clock.now(), clock.nextTimerAt));
              }
              clock.set(target);
              const now = clock.now();
              const expected = [...model]
                .filter(([, due]) => due <= now)
                .sort((a, b) => a[1] - b[1])
                .map(([id]) => id);
              expect(fired.map((entry) => entry.id).sort()).toEqual([...expected].sort());
              for (const entry of fired) {
                expect(entry.at).toBeGreaterThanOrEqual(entry.dueAtMs);
                // On time to the millisecond: at its due time, unless it was added already due.
                const added = addedAt.get(entry.id as number)!;
                expect(entry.at).toBe(Math.max(entry.dueAtMs, added));
                model.delete(entry.id as number);
              }
              for (let i = 1; i < fired.length; i++) {
                if (fired[i].at === fired[i - 1].at) {
                  expect(fired[i].dueAtMs).toBeGreaterThanOrEqual(fired[i - 1].dueAtMs);
                }
              }
            }
            expect(wheel.size + queue.size).toBe(model.size);
          }
          driver.stop();
          expect(clock.pendingTimers).toBe(0);
        },
      ),
      { numRuns: 300 },
    );
  });
});
