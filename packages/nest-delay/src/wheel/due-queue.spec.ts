import { DueQueue } from './due-queue.js';
import type { DueEntry } from './timing-wheel.js';

const entry = (id: string | number, dueAtMs: number): DueEntry<undefined> => ({
  id,
  dueAtMs,
  value: undefined,
  tick: dueAtMs,
});

describe('DueQueue', () => {
  it('hands out what is due by now, earliest first, ties in arrival order', () => {
    const queue = new DueQueue();
    for (const [id, at] of [
      ['c', 30],
      ['a', 10],
      ['b1', 20],
      ['b2', 20],
      ['d', 40],
    ] as const) {
      queue.push(entry(id, at));
    }
    expect(queue.peekDueAtMs()).toBe(10);
    expect(queue.popDue(9)).toEqual([]);
    expect(queue.popDue(20, 1).map((e) => e.id)).toEqual(['a']);
    queue.push(entry('a', 10));
    expect(queue.popDue(20).map((e) => e.id)).toEqual(['a', 'b1', 'b2']);
    expect(queue.size).toBe(2);
    expect(queue.popDue(100).map((e) => e.id)).toEqual(['c', 'd']);
    expect(queue.peekDueAtMs()).toBeUndefined();
  });

  it('cancels and replaces by id', () => {
    const queue = new DueQueue();
    queue.push(entry('a', 10));
    queue.push(entry('b', 20));
    expect(queue.cancel('a')).toBe(true);
    expect(queue.cancel('a')).toBe(false);
    expect(queue.has('a')).toBe(false);
    queue.push(entry('b', 5)); // moved earlier
    expect(queue.get('b')?.dueAtMs).toBe(5);
    expect(queue.size).toBe(1);
    expect(queue.peekDueAtMs()).toBe(5);
    expect(queue.popDue(100).map((e) => [e.id, e.dueAtMs])).toEqual([['b', 5]]);
  });

  it('stays small when the same ids are cancelled and pushed again and again', () => {
    const queue = new DueQueue();
    for (let round = 0; round < 1_000; round++) {
      for (let id = 0; id < 10; id++) {
        queue.cancel(id);
        queue.push(entry(id, 1_000 - round));
      }
    }
    expect(queue.size).toBe(10);
    expect((queue as unknown as { heap: unknown[] }).heap.length).toBeLessThanOrEqual(200);
    expect(queue.popDue(1).map((e) => e.id)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});
