import { leadSince, leadStart } from './lead-time.js';

describe('a handler lead', () => {
  it('is 0 for one that gets to its statement through promises alone, however long its code takes', async () => {
    const start = leadStart();
    const until = performance.now() + 5;
    while (performance.now() < until); // cold code, a busy machine
    for (let i = 0; i < 10; i++) await Promise.resolve();
    expect(leadSince(start)).toBe(0);
  });

  it('is the time it waited for one that waited on the event loop first', async () => {
    const start = leadStart();
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(leadSince(start)).toBeGreaterThanOrEqual(4);
  });

  it('tells apart handlers started in the same turn of the loop', async () => {
    const straight = leadStart();
    const waiting = leadStart();
    expect(leadSince(straight)).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 2));
    expect(leadSince(waiting)).toBeGreaterThan(0);
  });
});
