import fc from 'fast-check';
import { TimingWheel, type DueEntry, type EntryId } from './index.js';

interface Params {
  tickMs: number;
  slots: number;
  startMs: number;
}

type Op =
  | { kind: 'add'; id: EntryId; offsetMs: number }
  | { kind: 'cancel'; id: EntryId }
  | { kind: 'advance'; byMs: number; maxTicks: number }
  | { kind: 'clear' };

/**
 * The contract without the wheel: a flat list, fired when its due tick is reached, in
 * (due time, insertion) order. Small enough to be obviously right.
 */
class ReferenceWheel {
  private entries: { id: EntryId; dueAtMs: number; value: number; seq: number }[] = [];
  private seq = 0;

  constructor(
    private readonly tickMs: number,
    public tick: number,
  ) {}

  get size(): number {
    return this.entries.length;
  }

  has(id: EntryId): boolean {
    return this.entries.some((entry) => entry.id === id);
  }

  add(id: EntryId, dueAtMs: number, value: number): void {
    this.cancel(id);
    this.entries.push({ id, dueAtMs, value, seq: this.seq++ });
  }

  cancel(id: EntryId): boolean {
    const before = this.entries.length;
    this.entries = this.entries.filter((entry) => entry.id !== id);
    return this.entries.length < before;
  }

  clear(): void {
    this.entries = [];
  }

  earliestDueTick(): number | undefined {
    const ticks = this.entries.map((entry) => this.dueTick(entry.dueAtMs));
    return ticks.length === 0 ? undefined : Math.min(...ticks);
  }

  advance(nowMs: number, maxTicks: number): DueEntry<number>[] {
    const target = Math.floor(nowMs / this.tickMs);
    const end = target > this.tick ? Math.min(target, this.tick + maxTicks) : this.tick;
    // A clock set back behind the pointer fires only what is due by the clock.
    const by = Math.min(end, target);
    const due = this.entries.filter((entry) => this.dueTick(entry.dueAtMs) <= by);
    this.entries = this.entries.filter((entry) => this.dueTick(entry.dueAtMs) > by);
    this.tick = this.entries.length === 0 ? Math.max(this.tick, target) : end;
    return due
      .sort((a, b) => a.dueAtMs - b.dueAtMs || a.seq - b.seq)
      .map(({ id, dueAtMs, value }) => ({ id, dueAtMs, value, tick: this.dueTick(dueAtMs) }));
  }

  private dueTick(dueAtMs: number): number {
    return Math.ceil(dueAtMs / this.tickMs);
  }
}

const params: fc.Arbitrary<Params> = fc.record({
  tickMs: fc.constantFrom(1, 7, 10),
  slots: fc.constantFrom(8, 16),
  startMs: fc.integer({ min: 0, max: 10_000 }),
});

// A few dozen numeric ids to make the id table grow, plus strings and non-int32 numbers.
const id: fc.Arbitrary<EntryId> = fc.oneof(
  fc.integer({ min: 0, max: 40 }),
  fc.constantFrom<EntryId>('a', 'b', '7', 2 ** 40, -1.5),
);

function ops({ tickMs, slots }: Params): fc.Arbitrary<Op[]> {
  const revolution = tickMs * slots;
  const op: fc.Arbitrary<Op> = fc.oneof(
    {
      weight: 5,
      // Half-ms steps from two revolutions in the past to four ahead; exact tick edges included.
      arbitrary: fc.record({
        kind: fc.constant('add' as const),
        id,
        offsetMs: fc.integer({ min: -4 * revolution, max: 8 * revolution }).map((half) => half / 2),
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('cancel' as const), id }) },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('advance' as const),
        // Mostly forward; sometimes back, as a clock set back would go.
        byMs: fc.oneof(
          { weight: 4, arbitrary: fc.integer({ min: 0, max: 2 * tickMs }) },
          { weight: 4, arbitrary: fc.integer({ min: 0, max: 3 * revolution }) },
          { weight: 1, arbitrary: fc.integer({ min: -2 * revolution, max: -1 }) },
        ),
        maxTicks: fc.oneof(fc.constant(Infinity), fc.integer({ min: 1, max: 2 * slots })),
      }),
    },
    { weight: 1, arbitrary: fc.constant({ kind: 'clear' as const }) },
  );
  return fc.array(op, { maxLength: 80 });
}

describe('TimingWheel against a reference model', () => {
  it('fires the same entries, at the same advance calls, in the same order, never early (even when time goes back)', () => {
    fc.assert(
      fc.property(
        params.chain((p) => fc.tuple(fc.constant(p), ops(p))),
        ([{ tickMs, slots, startMs }, script]) => {
          const wheel = new TimingWheel<number>({ tickMs, slots, startMs });
          const model = new ReferenceWheel(tickMs, Math.floor(startMs / tickMs));
          let nowMs = startMs;
          let value = 0;
          let removedAny = false; // until then nextDueTick must be exact, not just a bound

          for (const op of script) {
            if (op.kind === 'add') {
              removedAny ||= model.has(op.id);
              wheel.add(op.id, nowMs + op.offsetMs, value);
              model.add(op.id, nowMs + op.offsetMs, value++);
            } else if (op.kind === 'cancel') {
              const cancelled = model.cancel(op.id);
              removedAny ||= cancelled;
              expect(wheel.cancel(op.id)).toBe(cancelled);
            } else if (op.kind === 'clear') {
              wheel.clear();
              model.clear();
            } else {
              nowMs += op.byMs;
              const fired = wheel.advance(nowMs, op.maxTicks);
              expect(fired).toEqual(model.advance(nowMs, op.maxTicks));
              for (const entry of fired)
                expect(wheel.deadlineOf(entry.tick)).toBeLessThanOrEqual(nowMs);
            }

            expect(wheel.size).toBe(model.size);
            expect(wheel.currentTick).toBe(model.tick);
            const earliest = model.earliestDueTick();
            const next = wheel.nextDueTick();
            if (earliest === undefined || !removedAny) expect(next).toBe(earliest);
            else expect(next).toBeLessThanOrEqual(earliest);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});
