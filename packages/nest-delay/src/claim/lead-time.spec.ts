import { Leads } from './lead-time.js';

describe('a handler lead', () => {
  it('is 0 for one that gets to its statement through promises alone, however long its code takes', async () => {
    const leads = new Leads();
    leads.started('1');
    const until = performance.now() + 5;
    while (performance.now() < until); // cold code, a busy machine
    for (let i = 0; i < 10; i++) await Promise.resolve();
    leads.statement('1');
    expect(leads.of('1')).toBe(0);
  });

  it('is the time it waited for one that waited on the event loop first', async () => {
    const leads = new Leads();
    leads.started('1');
    await new Promise((resolve) => setTimeout(resolve, 5));
    leads.statement('1');
    expect(leads.of('1')).toBeGreaterThanOrEqual(4);
  });

  it('ends at the first statement, and runs to now for a handler that sent none', async () => {
    const leads = new Leads();
    leads.started('straight');
    leads.started('silent');
    leads.statement('straight');
    await new Promise((resolve) => setTimeout(resolve, 2));
    leads.statement('straight');
    expect(leads.of('straight')).toBe(0);
    expect(leads.of('silent')).toBeGreaterThan(0);
  });
});
