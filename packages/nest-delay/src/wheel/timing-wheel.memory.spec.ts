import { TimingWheel } from './index.js';

const gc = (globalThis as { gc?: () => void }).gc;
const ENTRIES = 1_000_000;
const TIMERS = 100_000;

/** Heap plus off-heap buffers, where the wheel's typed arrays live. */
function usedBytes(): number {
  gc!();
  gc!();
  const { heapUsed, external } = process.memoryUsage();
  return heapUsed + external;
}

const describeWithGc = gc ? describe : describe.skip;
if (!gc) console.log('Skipping memory measurements: run node with --expose-gc (npm test does).');

describeWithGc('TimingWheel memory', () => {
  it('holds a million entries in well under the memory of pending setTimeout timers', () => {
    // setTimeout first, on a calm heap. The handle array exists before the baseline and all
    // timers share one callback and one duration (so one Node timer list): the figure is the
    // cost of the pending timers alone, a lower bound for any real use.
    const timers = new Array<ReturnType<typeof setTimeout> | null>(TIMERS).fill(null);
    const noop = () => undefined;
    let before = usedBytes();
    for (let i = 0; i < TIMERS; i++) timers[i] = setTimeout(noop, 1e9).unref();
    const timeoutBytes = (usedBytes() - before) / TIMERS;
    for (const timer of timers) clearTimeout(timer!);

    const shared = { type: 'order.auto-review' };
    const startMs = Date.UTC(2026, 0, 1);
    before = usedBytes();
    const wheel = new TimingWheel<typeof shared>({ startMs });
    // Spread over two days: every slot in use, most entries several revolutions out.
    for (let id = 1; id <= ENTRIES; id++)
      wheel.add(id, startMs + ((id * 7_919) % 172_800_000), shared);
    const wheelBytes = (usedBytes() - before) / ENTRIES;
    expect(wheel.size).toBe(ENTRIES);

    console.log(
      `bytes per entry: TimingWheel ${wheelBytes.toFixed(1)} (${ENTRIES} entries), ` +
        `setTimeout ${timeoutBytes.toFixed(1)} (${TIMERS} timers), ratio ${(wheelBytes / timeoutBytes).toFixed(2)}`,
    );
    expect(wheelBytes).toBeLessThan(60);
    expect(wheelBytes).toBeLessThan(0.4 * timeoutBytes);
  });
});
