import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { createDelayTestApp, type DelayTestApp } from './delay-test-app.js';

const HOUR = 3_600_000;

describe('bounded memory: the wheel holds the window, Postgres the rest', () => {
  let db: TestDatabase;
  let t: DelayTestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await createDelayTestApp(db, { window: '1h' });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('holds none of 200,000 tasks due beyond the window, and loads each as it comes within it', async () => {
    const now = t.clock.now();
    await t.query(
      `INSERT INTO delayed_task (type, payload, due_at, created_at, updated_at)
       SELECT 'test.effect', 'null', $1::timestamptz + interval '2 hours' + g * interval '100 milliseconds', $2, $2
       FROM generate_series(1, 200000) g`,
      [new Date(now), new Date(now)],
    );
    await t.runtime.refresh();
    expect(t.runtime.wheel.size).toBe(0);

    // A task scheduled through the API within the window goes straight into the wheel;
    // one beyond it does not.
    const near = await t.delay.schedule({ type: 'test.effect', delay: '10m' });
    const far = await t.delay.schedule({ type: 'test.effect', delay: '5h' });
    expect(t.runtime.wheel.has(Number(near.id))).toBe(true);
    expect(t.runtime.wheel.has(Number(far.id))).toBe(false);
    expect(t.runtime.wheel.size).toBe(1);

    // One hour and one minute later the window's horizon is 2 h 1 m from the start:
    // it reaches the tasks with g × 100 ms < 60 s, that is g = 1..599.
    t.clock.advance(HOUR + 60_000);
    await t.runtime.refresh();
    await t.delay.drain();
    expect(t.runtime.wheel.size).toBe(599);
    const [{ leased }] = await t.query(
      `SELECT count(*)::int AS leased FROM delayed_task WHERE locked_by IS NOT NULL AND executed_at IS NULL`,
    );
    expect(leased).toBe(599);
    expect((await t.delay.get(near.id))?.state).toBe('executed');
  }, 120_000);
});
