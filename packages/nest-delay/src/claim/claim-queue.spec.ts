import fc from 'fast-check';
import { ClaimQueue } from './dispatcher.js';

/** Takes batches until nothing waits; each batch's claim ends at once. */
function drain(queue: ClaimQueue, batchSize: number): string[][] {
  const batches: string[][] = [];
  while (queue.hasWaiting) {
    const batch = queue.takeBatch(batchSize);
    batches.push(batch);
    queue.claimEnded(batch);
  }
  return batches;
}

const ids = (from: number, count: number) =>
  Array.from({ length: count }, (_, i) => String(from + i));

type Command =
  | { kind: 'add'; ids: string[] }
  | { kind: 'take'; batchSize: number }
  | { kind: 'end'; pick: number }
  | { kind: 'idle' };

const command: fc.Arbitrary<Command> = fc.oneof(
  fc.record({
    kind: fc.constant('add' as const),
    ids: fc.array(fc.integer({ min: 1, max: 30 }).map(String), { maxLength: 12 }),
  }),
  fc.record({
    kind: fc.constant('take' as const),
    batchSize: fc.integer({ min: 1, max: 8 }),
  }),
  fc.record({ kind: fc.constant('end' as const), pick: fc.nat() }),
  fc.constant({ kind: 'idle' as const }),
);

describe('ClaimQueue', () => {
  it('hands out ids in the order they fired, each once, never one whose claim is under way; one fired again meanwhile comes after that claim', () => {
    fc.assert(
      fc.property(fc.array(command, { maxLength: 80 }), (commands) => {
        const queue = new ClaimQueue();
        // The model: ids waiting in order, and batches whose claims are under way.
        const waiting: string[] = [];
        const claims: string[][] = [];
        // Fired again while in a claim: queued once that claim ends.
        const again = new Set<string>();
        const inClaim = () => new Set(claims.flat());
        for (const c of commands) {
          if (c.kind === 'add') {
            queue.add(c.ids);
            for (const id of c.ids) {
              if (waiting.includes(id)) continue;
              if (inClaim().has(id)) again.add(id);
              else waiting.push(id);
            }
          } else if (c.kind === 'take') {
            const batch = queue.takeBatch(c.batchSize);
            expect(batch).toEqual(waiting.slice(0, batch.length));
            expect(batch.length).toBeLessThanOrEqual(c.batchSize);
            if (waiting.length > 0) expect(batch.length).toBeGreaterThan(0);
            waiting.splice(0, batch.length);
            if (batch.length > 0) claims.push(batch);
          } else if (c.kind === 'end') {
            if (claims.length === 0) continue;
            const [ended] = claims.splice(c.pick % claims.length, 1);
            queue.claimEnded(ended);
            for (const id of ended) if (again.delete(id) && !waiting.includes(id)) waiting.push(id);
          } else {
            queue.idle();
          }
          expect(queue.size).toBe(waiting.length);
          expect(queue.hasWaiting).toBe(waiting.length > 0);
        }
      }),
    );
  });

  it('takes every id waiting, up to batchSize, when no more than a batch waits', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 50 }), (count, batchSize) => {
        fc.pre(count <= batchSize);
        const queue = new ClaimQueue();
        queue.add(ids(1, count));
        expect(queue.takeBatch(batchSize)).toEqual(ids(1, count));
        expect(queue.hasWaiting).toBe(false);
      }),
    );
  });

  it('starts a burst from idle at one task a batch and doubles up to batchSize', () => {
    const queue = new ClaimQueue();
    queue.add(ids(1, 1000));
    const sizes = drain(queue, 50)
      .slice(0, 8)
      .map((batch) => batch.length);
    expect(sizes).toEqual([1, 2, 4, 8, 16, 32, 50, 50]);
    // Only after idle does the next burst ramp up from one again.
    queue.add(ids(2000, 1000));
    expect(queue.takeBatch(50)).toHaveLength(50);
    queue.idle();
    expect(queue.takeBatch(50)).toHaveLength(1);
  });

  it('queues a task that may only run alone ahead of the rest, one claim each', () => {
    const queue = new ClaimQueue();
    queue.add(['1', '2']);
    queue.addAlone('9');
    queue.addAlone('8');
    expect(queue.size).toBe(4);
    expect(queue.hasAlone).toBe(true);
    expect(queue.takeAlone()).toEqual(['9']);
    expect(queue.takeAlone()).toEqual(['8']);
    expect(queue.hasAlone).toBe(false);
    expect(queue.size).toBe(2);
  });

  it('does not queue again an id whose claim is under way, until claimEnded', () => {
    const queue = new ClaimQueue();
    queue.add(['1', '2', '3']);
    const batch = queue.takeBatch(50);
    expect(batch).toEqual(['1', '2', '3']);
    queue.add(['2', '4']);
    expect(queue.size).toBe(1);
    queue.claimEnded(['2']);
    queue.add(['2', '4']);
    expect(queue.takeBatch(50)).toEqual(['4', '2']);
  });

  it('queues an id fired again during its claim once that claim ends (the claim may have looked too early)', () => {
    const queue = new ClaimQueue();
    queue.add(['1', '2']);
    expect(queue.takeBatch(50)).toEqual(['1', '2']);
    queue.add(['2']);
    expect(queue.hasWaiting).toBe(false);
    expect(queue.has('2')).toBe(true);
    queue.claimEnded(['1', '2']);
    expect(queue.takeBatch(50)).toEqual(['2']);
    queue.claimEnded(['2']);
    expect(queue.has('1')).toBe(false);
    expect(queue.has('2')).toBe(false);
  });

  it('keeps an alone task out of batches while its claim is under way', () => {
    const queue = new ClaimQueue();
    queue.addAlone('5');
    expect(queue.takeAlone()).toEqual(['5']);
    queue.add(['5']);
    expect(queue.hasWaiting).toBe(false);
    queue.claimEnded(['5']);
    queue.add(['5']);
    expect(queue.takeBatch(50)).toEqual(['5']);
  });

  it('stays in due order across a long queue that compacts behind its head', () => {
    const queue = new ClaimQueue();
    queue.add(ids(1, 10_000));
    const taken = drain(queue, 50).flat();
    expect(taken).toEqual(ids(1, 10_000));
    queue.add(['1']);
    expect(queue.takeBatch(50)).toEqual(['1']);
  });

  it('clear drops what waits, alone tasks included', () => {
    const queue = new ClaimQueue();
    queue.add(['1', '2']);
    queue.addAlone('3');
    queue.clear();
    expect(queue.size).toBe(0);
    expect(queue.hasAlone).toBe(false);
    queue.add(['1']);
    expect(queue.takeBatch(50)).toEqual(['1']);
  });
});
