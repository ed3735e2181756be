import pg from 'pg';
import { createTestDatabase, describeWithServer } from '../support/test-database.js';
import {
  createDelayTestApp,
  useDelayTestApp,
  HOUR,
  MINUTE,
  type DelayTestApp,
} from './delay-test-app.js';

const DAY = 24 * HOUR;

describe('retention', () => {
  const app = useDelayTestApp({ retry: { maxAttempts: 1 } });
  let t: DelayTestApp;

  beforeAll(async () => {
    t = app.t;
  });

  const exists = async (id: string) =>
    (await t.query(`SELECT 1 FROM delayed_task WHERE id = $1`, [id])).length === 1;

  it('deletes executed and cancelled tasks after 7 days, dead ones after 30, never a pending one', async () => {
    const executed = await t.delay.schedule({ type: 'test.effect', delay: '1m' });
    const cancelled = await t.delay.schedule({ type: 'test.effect', delay: '1m' });
    const dead = await t.delay.schedule({ type: 'test.always-fails', delay: '1m' });
    const pending = await t.delay.schedule({ type: 'test.effect', delay: '100d' });
    await t.delay.cancel({ id: cancelled.id });
    await t.tester.advance('1m');
    expect((await t.delay.get({ id: dead.id }))?.state).toBe('dead');

    // Advancing the clock also fires the pruner's own rounds; prune() makes sure one ran now.
    await t.tester.advance(7 * DAY - 2 * MINUTE);
    await t.tester.prune();
    expect(await exists(executed.id)).toBe(true);
    expect(await exists(cancelled.id)).toBe(true);

    // Cancelled at the start, executed a minute later: both finished over 7 days ago now.
    await t.tester.advance(3 * MINUTE);
    await t.tester.prune();
    expect(await exists(executed.id)).toBe(false);
    expect(await exists(cancelled.id)).toBe(false);
    expect(await exists(dead.id)).toBe(true);

    await t.tester.advance(23 * DAY - MINUTE);
    await t.tester.prune();
    expect(await exists(dead.id)).toBe(true);
    await t.tester.advance(2 * MINUTE);
    await t.tester.prune();
    expect(await exists(dead.id)).toBe(false);
    expect(await t.delay.get({ id: pending.id })).toMatchObject({ state: 'pending' });
  });

  it('works through a large backlog in batches, in one round', async () => {
    // The clock stands still from here, so no round of the pruner's own runs meanwhile.
    const now = new Date(t.clock.now() - 8 * DAY);
    await t.query(
      `INSERT INTO delayed_task (type, due_at, executed_at, attempts, created_at, updated_at)
       SELECT 'test.effect', $1, $1, 1, $1, $1 FROM generate_series(1, 2500)`,
      [now],
    );
    expect(await t.tester.prune()).toBe(2500);
  });

  it('reports a prune the database refused, instead of returning 0', async () => {
    const now = new Date(t.clock.now() - 8 * DAY);
    await t.query(
      `INSERT INTO delayed_task (type, due_at, executed_at, attempts, created_at, updated_at)
       VALUES ('test.effect', $1, $1, 1, $1, $1)`,
      [now],
    );
    await t.query(`CREATE FUNCTION refuse_delete() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'deletes from delayed_task are refused here'; END $$`);
    await t.query(`CREATE TRIGGER refuse_delete BEFORE DELETE ON delayed_task
      FOR EACH ROW EXECUTE FUNCTION refuse_delete()`);
    try {
      await expect(t.tester.prune()).rejects.toThrow(/deletes from delayed_task are refused here/);
    } finally {
      await t.query(`DROP TRIGGER refuse_delete ON delayed_task`);
      await t.query(`DROP FUNCTION refuse_delete()`);
    }
    expect(await t.tester.prune()).toBe(1);
  });
});

describe('retention turned off', () => {
  const app2 = useDelayTestApp({
    retry: { maxAttempts: 1 },
    retention: { finished: false, dead: false },
  });
  let t: DelayTestApp;

  beforeAll(async () => {
    t = app2.t;
  });

  it('keeps every task forever', async () => {
    const done = await t.delay.schedule({ type: 'test.effect', delay: 0 });
    const dead = await t.delay.schedule({ type: 'test.always-fails', delay: 0 });
    await t.tester.advance(400 * DAY);
    expect(await t.tester.prune()).toBe(0);
    expect((await t.delay.get({ id: done.id }))?.state).toBe('executed');
    expect((await t.delay.get({ id: dead.id }))?.state).toBe('dead');
  });
});

describeWithServer('retention at shutdown', () => {
  it('ends the round under way after its current batch, instead of holding up the stop', async () => {
    const db = await createTestDatabase();
    try {
      const t = await createDelayTestApp(db, { retry: { maxAttempts: 1 } });
      const old = new Date(t.clock.now() - 8 * DAY);
      await t.query(
        `INSERT INTO delayed_task (type, due_at, executed_at, attempts, created_at, updated_at)
         SELECT 'test.effect', $1, $1, 1, $1, $1 FROM generate_series(1, 3500)`,
        [old],
      );
      const round = t.tester.prune();
      await t.close();
      expect(await round).toBe(1000);
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        const { rows } = await client.query(`SELECT count(*)::int AS n FROM delayed_task`);
        expect(rows[0].n).toBe(2500);
      } finally {
        await client.end();
      }
    } finally {
      await db.drop();
    }
  });
});
