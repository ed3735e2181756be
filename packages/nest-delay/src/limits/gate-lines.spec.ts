import fc from 'fast-check';
import { GateLines, LimitBook } from './gate-lines.js';
import type { GateLinesConfig } from './gate-line.types.js';
import type { ResolvedLimit } from '../task-limit.js';

const config: GateLinesConfig = {
  batchSize: 50,
  spread: 4,
  capacity: 1000,
  firstBackoffMs: 10,
  maxBackoffMs: 1000,
};

function linesWith(
  declared: Record<string, ResolvedLimit>,
  overrides: Partial<GateLinesConfig> = {},
) {
  const book = new LimitBook((type) => declared[type]);
  return { book, lines: new GateLines((type) => book.of(type), { ...config, ...overrides }) };
}

const one: ResolvedLimit = { concurrency: 1, rate: null };

describe('GateLines', () => {
  it('hands each line its tasks in due order, whatever order they came in', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            dueAtMs: fc.integer({ min: 0, max: 50 }),
            key: fc.constantFrom('a', 'b', 'c'),
          }),
          {
            minLength: 1,
            maxLength: 60,
          },
        ),
        (tasks) => {
          const { lines } = linesWith({ t: one }, { batchSize: 1 });
          tasks.forEach((task, i) =>
            lines.add({ id: String(i + 1), type: 't', key: task.key, dueAtMs: task.dueAtMs }, 100),
          );
          const taken = new Map<string, Array<[number, number]>>();
          for (let claim = lines.next(100, true); claim; claim = lines.next(100, true)) {
            for (const item of claim.items)
              taken.set(claim.line.key, [
                ...(taken.get(claim.line.key) ?? []),
                [item.dueAtMs, Number(item.id)],
              ]);
            lines.ended(claim, { kind: 'ran' }, [], 100);
          }
          let total = 0;
          for (const order of taken.values()) {
            total += order.length;
            const sorted = [...order].sort((x, y) => x[0] - y[0] || x[1] - y[1]);
            expect(order).toEqual(sorted);
          }
          expect(total).toBe(tasks.length);
        },
      ),
    );
  });

  it('never runs more claims of a line at once than its concurrency', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 40 }),
        (concurrency, count) => {
          const { lines } = linesWith({ t: { concurrency, rate: null } });
          for (let i = 0; i < count; i++)
            lines.add({ id: String(i + 1), type: 't', key: '', dueAtMs: i }, 100);
          let running = 0;
          while (lines.next(100, true)) running++;
          expect(running).toBeLessThanOrEqual(concurrency);
          expect(running).toBeGreaterThanOrEqual(1);
        },
      ),
    );
  });

  it('among heads due together, the line that waited longest since its last claim goes first', () => {
    const { lines } = linesWith({ t: one }, { batchSize: 1 });
    for (const key of ['a', 'b', 'c'])
      for (let i = 0; i < 3; i++) lines.add({ id: `${key}${i}`, type: 't', key, dueAtMs: 0 }, 100);
    const order: string[] = [];
    for (let claim = lines.next(100, true); claim; claim = lines.next(100, true)) {
      order.push(claim.line.key);
      lines.ended(claim, { kind: 'ran' }, [], 100);
    }
    // Round robin, not a line drained before the next starts.
    expect(order.slice(0, 3).sort()).toEqual(['a', 'b', 'c']);
    expect(order.slice(3, 6).sort()).toEqual(['a', 'b', 'c']);
  });

  it('holds a paused type, and sheds beyond its capacity', () => {
    const { lines, book } = linesWith({ t: one }, { capacity: 5 });
    book.apply({ type: 't', paused_at: new Date(0) });
    const added = Array.from({ length: 8 }, (_, i) =>
      lines.add({ id: String(i + 1), type: 't', key: '', dueAtMs: i }, 100),
    );
    expect(added.filter((a) => a === 'added')).toHaveLength(5);
    expect(added.filter((a) => a === 'shed')).toHaveLength(3);
    expect(lines.size).toBe(5);
    expect(lines.next(100, true)).toBeUndefined();
    book.apply({ type: 't', paused_at: null });
    expect(lines.next(100, true)?.items.map((item) => item.id)).toEqual(['1', '2', '3', '4', '5']);
  });

  it('waits after a busy answer, doubling, and tries at once when a claim of its own ends', () => {
    const { lines } = linesWith({ t: { concurrency: 2, rate: null } }, { batchSize: 1 });
    for (let i = 0; i < 4; i++) lines.add({ id: String(i + 1), type: 't', key: '', dueAtMs: i }, 0);
    const a = lines.next(0, true)!;
    const b = lines.next(0, true)!;
    lines.ended(b, { kind: 'busy' }, b.items, 0);
    expect(lines.nextWakeMs()).toBe(10);
    expect(lines.hasReady(5)).toBe(false);
    lines.ended(a, { kind: 'ran' }, [], 5);
    expect(lines.hasReady(5)).toBe(true);
  });
});

describe('GateLines: a line whose seats are held elsewhere', () => {
  it('claims again once its backoff is over, and waits twice as long after another busy answer', () => {
    const { lines } = linesWith({ t: { concurrency: 1, rate: null } }, { batchSize: 1 });
    lines.add({ id: '1', type: 't', key: '', dueAtMs: 0 }, 0);
    const first = lines.next(0, true)!;
    lines.ended(first, { kind: 'busy' }, first.items, 0);
    lines.wakeDue(9);
    expect(lines.hasReady(9)).toBe(false);
    lines.wakeDue(10);
    const again = lines.next(10, true)!;
    expect(again.items.map((item) => item.id)).toEqual(['1']);
    lines.ended(again, { kind: 'busy' }, again.items, 10);
    expect(lines.nextWakeMs()).toBe(30);
  });
});

describe('LimitBook', () => {
  it('puts a run-time override in place of the declared limits, field for field, and a reset back', () => {
    fc.assert(
      fc.property(
        fc.option(fc.integer({ min: 1, max: 10 })),
        fc.option(
          fc.record({
            starts: fc.integer({ min: 1, max: 10 }),
            perMs: fc.integer({ min: 1, max: 1e6 }),
          }),
        ),
        fc.boolean(),
        (concurrency, rate, paused) => {
          const declared: ResolvedLimit = { concurrency: 3, rate: null };
          const book = new LimitBook(() => declared);
          book.replace([
            {
              type: 't',
              paused_at: paused ? new Date(1) : null,
              overridden: true,
              concurrency,
              rate_starts: rate?.starts ?? null,
              rate_per_ms: rate ? String(rate.perMs) : null,
              updated_at: new Date(1),
              ...undeclared,
            },
          ]);
          const limits = book.of('t');
          expect(limits.effective).toEqual({ concurrency, rate });
          expect(limits.declared).toBe(declared);
          expect(book.gates('t')).toBe(paused || concurrency !== null || rate !== null);
          book.apply({ type: 't', overridden: false });
          expect(book.of('t').effective).toBe(declared);
          expect(book.gates('t')).toBe(true);
        },
      ),
    );
  });

  it('knows nothing of a type without a row: its declared limits hold, unpaused', () => {
    const book = new LimitBook(() => undefined);
    expect(book.of('x')).toMatchObject({
      override: null,
      pausedAt: null,
      effective: { concurrency: null, rate: null },
    });
    expect(book.gates('x')).toBe(false);
  });

  it('does not take a task twice: handed over again while its claim runs, that claim accounts for it', () => {
    const { lines } = linesWith({ t: one });
    lines.add({ id: '1', type: 't', key: '', dueAtMs: 0 }, 0);
    const claim = lines.next(0, true)!;
    expect(claim.items.map((item) => item.id)).toEqual(['1']);
    // A fired claim hands it over meanwhile: already here, once is enough.
    expect(lines.add({ id: '1', type: 't', key: '', dueAtMs: 0 }, 0)).toBe('here');
    // Its claim ran it: it is gone from the gate, not queued again (a second
    // claim would spend a rate credit on a task already run). One its claim
    // passed by is the claim runner's to recheck, not the gate's.
    lines.ended(claim, { kind: 'done' }, [], 0);
    expect(lines.has('1')).toBe(false);
    expect(lines.next(0, true)).toBeUndefined();
  });
});

const undeclared = {
  declared_concurrency: null,
  declared_rate_starts: null,
  declared_rate_per_ms: null,
  declared_per_key: false,
  declared_at: null,
  declared_by: null,
};

describe('LimitBook: declared limits', () => {
  const row = {
    type: 't',
    paused_at: null,
    overridden: false,
    concurrency: null,
    rate_starts: null,
    rate_per_ms: null,
    updated_at: new Date(1),
  };

  it("takes the declaration stored at boot over this instance's code, and the code before any is stored", () => {
    const book = new LimitBook(() => ({ concurrency: 3, rate: null }));
    book.replace([{ ...row, ...undeclared }]);
    expect(book.of('t').effective).toEqual({ concurrency: 3, rate: null });
    book.replace([
      {
        ...row,
        ...undeclared,
        declared_rate_starts: 5,
        declared_rate_per_ms: '1000',
        declared_at: new Date(2),
        declared_by: 'v2',
      },
    ]);
    expect(book.of('t').declared).toEqual({ concurrency: null, rate: { starts: 5, perMs: 1000 } });
    expect(book.gates('t')).toBe(true);
    // A newer version declared no limit: the type no longer gates, whatever this code says.
    book.replace([{ ...row, ...undeclared, declared_at: new Date(3), declared_by: 'v3' }]);
    expect(book.gates('t')).toBe(false);
  });
});

describe('GateLines: a line waiting for a rate credit', () => {
  const paced: ResolvedLimit = { concurrency: null, rate: { starts: 3, perMs: 1000 } };
  const waitingLine = () => {
    const { lines } = linesWith({ t: paced }, { batchSize: 2, spread: 1 });
    for (const id of ['1', '2', '3', '4']) lines.add({ id, type: 't', key: '', dueAtMs: 0 }, 0);
    return lines;
  };

  it('asks again at once when a credit settled while its take ran (the take may have skipped it)', () => {
    const lines = waitingLine();
    const first = lines.next(0, true)!;
    lines.creditTaken(first);
    const second = lines.next(0, true)!;
    // The first claim puts back a credit while the second's take runs: that
    // take found the row locked, and answers with a credit a second away.
    lines.creditSettled('t', '', true);
    lines.ended(second, { kind: 'rate', nextFreeMs: 1000 }, second.items, 0);
    expect(lines.next(0, true)?.items.map((item) => item.id)).toEqual(['3', '4']);
  });

  it('found every credit in flight while one was stamped: asks again at once (the stamp names a time)', () => {
    const lines = waitingLine();
    const claim = lines.next(0, true)!;
    lines.creditSettled('t', '', false);
    lines.ended(claim, { kind: 'rate', nextFreeMs: null }, claim.items, 0);
    expect(lines.next(0, true)?.items.map((item) => item.id)).toEqual(['1', '2']);
  });

  it('keeps the wait another claim of the line learned when one of its own ran, and a put-back still wakes it', () => {
    const lines = waitingLine();
    const ran = lines.next(0, true)!;
    lines.creditTaken(ran);
    const short = lines.next(0, true)!;
    lines.ended(short, { kind: 'rate', nextFreeMs: 1000 }, short.items, 0);
    lines.ended(ran, { kind: 'ran' }, [], 0);
    expect(lines.nextWakeMs()).toBe(1000);
    expect(lines.next(0, true)).toBeUndefined();
    expect(lines.creditSettled('t', '', true)).toBe(true);
    expect(lines.next(0, true)?.items.map((item) => item.id)).toEqual(['3', '4']);
  });

  it('keeps waiting on the next stamp when another claim of the line ran meanwhile', () => {
    const lines = waitingLine();
    const ran = lines.next(0, true)!;
    lines.creditTaken(ran);
    const short = lines.next(0, true)!;
    lines.ended(short, { kind: 'rate', nextFreeMs: null }, short.items, 0);
    lines.ended(ran, { kind: 'ran' }, [], 0);
    expect(lines.creditSettled('t', '', false)).toBe(true);
  });

  it('waits for the credit its take named when no credit was put back meanwhile', () => {
    const lines = waitingLine();
    const claim = lines.next(0, true)!;
    // Its one start's stamp: a credit stamped now frees after the one the take named.
    lines.creditSettled('t', '', false);
    lines.ended(claim, { kind: 'rate', nextFreeMs: 1000 }, claim.items.slice(1), 0);
    expect(lines.next(999, true)).toBeUndefined();
    expect(lines.nextWakeMs()).toBe(1000);
    // A stamp elsewhere does not move a credit that frees at a known time earlier.
    expect(lines.creditSettled('t', '', false)).toBe(false);
    expect(lines.next(1000, true)?.items.map((item) => item.id)).toEqual(['2', '3']);
  });

  it('found every credit in flight: the next stamp, not a clock, wakes it; a put-back always does', () => {
    const lines = waitingLine();
    const claim = lines.next(0, true)!;
    lines.ended(claim, { kind: 'rate', nextFreeMs: null }, claim.items, 0);
    // A clock that does not move (a test's) would never end the backoff.
    expect(lines.next(0, true)).toBeUndefined();
    expect(lines.creditSettled('t', '', false)).toBe(true);
    const again = lines.next(0, true)!;
    lines.ended(again, { kind: 'rate', nextFreeMs: 1000 }, again.items, 0);
    expect(lines.next(0, true)).toBeUndefined();
    expect(lines.creditSettled('t', '', true)).toBe(true);
    expect(lines.next(0, true)?.items.map((item) => item.id)).toEqual(['1', '2']);
  });
});
