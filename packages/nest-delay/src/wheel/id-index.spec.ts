import fc from 'fast-check';
import { IdIndex, type EntryId } from './id-index.js';

describe('IdIndex', () => {
  it('agrees with a Map through inserts and removals, across growth and collisions', () => {
    const id: fc.Arbitrary<EntryId> = fc.oneof(
      fc.integer({ min: -20, max: 300 }),
      fc.integer({ min: 0, max: 50 }).map((n) => `order:${n}`),
      fc.constantFrom<EntryId>(2 ** 40, 2 ** 53 - 1, -0.5, 1e-9, ''),
    );
    const op = fc.record({ insert: fc.boolean(), id });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 400 }), (script) => {
        const index = new IdIndex(4_096);
        const model = new Map<EntryId, number>();
        const free: number[] = [];
        let nextHandle = 0;
        for (const { insert, id } of script) {
          const handle = index.find(id);
          expect(handle).toBe(model.get(id) ?? -1);
          if (insert && handle === -1) {
            const fresh = free.pop() ?? nextHandle++;
            index.insert(id, fresh);
            model.set(id, fresh);
          } else if (!insert && handle !== -1) {
            index.remove(handle);
            model.delete(id);
            free.push(handle);
          }
          expect(index.size).toBe(model.size);
        }
        for (const [key, handle] of model) {
          expect(index.find(key)).toBe(handle);
          expect(index.idOf(handle)).toBe(key);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('treats 0 and -0 as one id and numbers and strings as different ids', () => {
    const index = new IdIndex(4);
    index.insert(0, 0);
    expect(index.find(-0)).toBe(0);
    expect(index.find('0')).toBe(-1);
  });
});
