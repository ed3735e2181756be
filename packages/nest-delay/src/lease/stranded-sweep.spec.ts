import type { Dispatcher } from '../claim/dispatcher.js';
import type { TaskWheel } from '../firing/task-wheel.js';
import type { DelayContext } from '../context/delay-context.js';
import type { Sql } from '../store/sql.js';
import { StrandedSweep } from './stranded-sweep.js';

/**
 * A sweep over a database holding one task leased here, due a minute ago
 * and held nowhere; `behind`: a full batch waits in the claim queue.
 */
function sweepWith(behind: boolean) {
  const queue = { behind };
  const statements: string[] = [];
  const held: string[] = [];
  const dueAt = new Date(Date.now() - 60_000);
  const pool: Sql = {
    rows: async <T>(text: string) => {
      statements.push(text);
      const row = { id: '7', due_at: dueAt, type: 'order.close', locked_by: 'here' };
      return [row] as T[];
    },
  };
  const ctx = {
    options: { instanceId: 'here' },
    clock: { now: () => Date.now() },
    db: { pool },
    policy: { holds: (lockedBy: string | null) => lockedBy === 'here' },
    logger: { warn: () => {} },
  } as unknown as DelayContext;
  const wheel = {
    has: () => false,
    hold: (id: string) => held.push(id),
  } as unknown as TaskWheel;
  const dispatcher = {
    get behind() {
      return queue.behind;
    },
    accounts: () => false,
  } as unknown as Dispatcher;
  return { sweep: new StrandedSweep(ctx, wheel, dispatcher), statements, held, queue };
}

describe('StrandedSweep', () => {
  it('holds again a task leased here and held nowhere', async () => {
    const { sweep, statements, held } = sweepWith(false);
    await sweep.run();
    expect(statements).toHaveLength(2); // the page, then the task read again by id
    expect(held).toEqual(['7']);
    expect(sweep.rescued).toBe(1);
  });

  it('reads nothing while a full batch waits for a claim, and finds the task once it does not', async () => {
    const { sweep, statements, held, queue } = sweepWith(true);
    await sweep.run();
    await sweep.run();
    expect(statements).toEqual([]);
    expect(held).toEqual([]);
    // The backlog drained: the next round reads the page.
    queue.behind = false;
    await sweep.run();
    expect(held).toEqual(['7']);
    expect(sweep.rescued).toBe(1);
  });
});
