import { ManualClock } from 'nest-delay/testing';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';
import {
  ADMIN_TOKEN,
  TEST_TYPE,
  createAdminTestApp,
  useAdminTestApp,
  type AdminTestApp,
} from './admin-test-app.js';

const START = Date.UTC(2026, 0, 1); // the ManualClock's start: slot 0 of a 60-slot, 1 s wheel

async function seedMany(
  t: AdminTestApp,
  n: number,
  state: 'pending' | 'dead' | 'executed',
  type = TEST_TYPE,
) {
  await t.query(
    `INSERT INTO delayed_task (type, due_at, executed_at, dead_at, created_at, updated_at)
     SELECT $1, '2030-01-01T00:00:00Z', $3::timestamptz, $4::timestamptz, now(), now()
     FROM generate_series(1, $2)`,
    [
      type,
      n,
      state === 'executed' ? '2026-01-01T00:00:00Z' : null,
      state === 'dead' ? '2026-01-01T00:00:00Z' : null,
    ],
  );
}

describe('counts', () => {
  const ctx = useAdminTestApp({ ADMIN_TOKEN, ADMIN_COUNT_CAP: '5' });

  it('reads at most the cap per state and says so: "5+" rather than a scan of every row', async () => {
    const { t } = ctx;
    await seedMany(t, 7, 'pending');
    await seedMany(t, 2, 'dead', 'admin.other');
    await seedMany(t, 1, 'executed');
    const res = await t.get('/admin/api/counts').expect(200);
    expect(res.body).toMatchObject({
      cap: 5,
      computedAt: new Date(t.clock.now()).toISOString(),
      states: {
        pending: { count: 5, capped: true, label: '5+' },
        executed: { count: 1, capped: false, label: '1' },
        cancelled: { count: 0, capped: false, label: '0' },
        dead: { count: 2, capped: false, label: '2' },
      },
    });
    expect(res.body.types).toEqual(
      expect.arrayContaining([
        { type: 'admin.other', pending: 0, executed: 0, cancelled: 0, dead: 2 },
        // Of the capped pending state, the rows read: the cap plus the one that shows there are more.
        { type: TEST_TYPE, pending: 6, executed: 1, cancelled: 0, dead: 0 },
      ]),
    );
  });

  it('serves one computation for 5 s of the clock, then counts again', async () => {
    const { t } = ctx;
    const first = (await t.get('/admin/api/counts').expect(200)).body;
    await seedMany(t, 1, 'dead', 'admin.other');
    t.clock.advance(4_999);
    const cached = (await t.get('/admin/api/counts').expect(200)).body;
    expect(cached).toEqual(first);
    t.clock.advance(1);
    const fresh = (await t.get('/admin/api/counts').expect(200)).body;
    expect(fresh.states.dead.count).toBe(first.states.dead.count + 1);
    expect(fresh.computedAt).toBe(new Date(t.clock.now()).toISOString());
  });
});

describe('the wheel', () => {
  const ctx = useAdminTestApp({ ADMIN_TOKEN, DELAY_WHEEL_SLOTS: '60', DELAY_TICK_MS: '1000' });

  it("pictures this instance's ring: slots, pointer, entries per region and when they fall due", async () => {
    const { t } = ctx;
    expect(t.clock.now()).toBe(START);
    await t.delay.schedule({ type: TEST_TYPE, delay: '5s' }); // tick +5, slot 5
    await t.delay.schedule({ type: TEST_TYPE, delay: 5_500 }); // fires on tick +6, slot 6
    await t.delay.schedule({ type: TEST_TYPE, delay: '30s' }); // slot 30
    const res = await t.get('/admin/api/wheel?regions=6').expect(200);
    const at = (ms: number) => new Date(START + ms).toISOString();
    expect(res.body).toMatchObject({
      now: at(0),
      windowMs: 60_000,
      slots: 60,
      tickMs: 1000,
      pointerSlot: 0,
      size: 3,
      overdue: 0,
    });
    expect(res.body.regions).toHaveLength(6);
    expect(res.body.regions[0]).toEqual({
      fromSlot: 0,
      toSlot: 9,
      entries: 2,
      thisRevolution: 2,
      // Slot 1 is next; slot 0 (the pointer's) comes round last, a revolution on.
      passFrom: at(1_000),
      passTo: at(60_000),
      earliestDueAt: at(5_000),
      latestDueAt: at(5_500),
    });
    expect(res.body.regions[3]).toMatchObject({
      fromSlot: 30,
      toSlot: 39,
      entries: 1,
      passFrom: at(30_000),
      passTo: at(39_000),
    });
    const rest = res.body.regions.filter((_: unknown, i: number) => i !== 0 && i !== 3);
    expect(rest.every((r: { entries: number }) => r.entries === 0)).toBe(true);

    await t.tester.advance('10s'); // the two in region 0 run; the pointer moves on
    const later = (await t.get('/admin/api/wheel?regions=6').expect(200)).body;
    // A tick ahead of the clock: the next tick's tasks already wait for their exact time.
    expect(later).toMatchObject({ pointerSlot: 11, size: 1 });
  });

  it.each(['regions=0', 'regions=61', 'regions=x'])(
    'answers ?%s with a 400 naming regions',
    async (q) => {
      const res = await ctx.t.get(`/admin/api/wheel?${q}`).expect(400);
      expect(JSON.stringify(res.body.message)).toContain('regions');
    },
  );
});

describe('instances', () => {
  const ctx = useAdminTestApp({ ADMIN_TOKEN, DELAY_INSTANCE_ID: 'solo' });

  it('lists this instance with its lease, what it holds and its clock against the database', async () => {
    const { t } = ctx;
    await t.delay.schedule({ type: TEST_TYPE, delay: '10m' });
    const [solo] = (await t.get('/admin/api/instances').expect(200)).body;
    expect(solo).toMatchObject({ id: 'solo', self: true, live: true, held: 1, heldCapped: false });
    expect(new Date(solo.leaseUntil).getTime()).toBeGreaterThan(t.clock.now());
    // A ManualClock stands at 2026-01-01, far from the database's: the offset shows it.
    expect(Math.abs(solo.clockOffsetMs - (t.clock.now() - Date.now()))).toBeLessThan(60_000);
  });
});

describeWithServer('instances of two apps on one database', () => {
  let db: TestDatabase;
  let apps: AdminTestApp[];

  beforeAll(async () => {
    db = await createTestDatabase();
    const clock = new ManualClock();
    apps = [];
    for (const id of ['instance-a', 'instance-b']) {
      apps.push(await createAdminTestApp(db, { ADMIN_TOKEN, DELAY_INSTANCE_ID: id }, { clock }));
    }
  });

  afterAll(async () => {
    for (const app of apps ?? []) await app.close();
    await db?.drop();
  });

  it('shows each live instance, its lease and how many tasks it holds, from either of them', async () => {
    const [a, b] = apps;
    for (let i = 0; i < 3; i++) await a.delay.schedule({ type: TEST_TYPE, delay: '10m' });
    for (let i = 0; i < 2; i++) await b.delay.schedule({ type: TEST_TYPE, delay: '10m' });
    const fromA = (await a.get('/admin/api/instances').expect(200)).body;
    expect(fromA).toMatchObject([
      { id: 'instance-a', self: true, live: true, held: 3 },
      { id: 'instance-b', self: false, live: true, held: 2 },
    ]);
    for (const instance of fromA) expect(instance.clockOffsetMs).toEqual(expect.any(Number));
    const fromB = (await b.get('/admin/api/instances').expect(200)).body;
    expect(fromB.map((i: { id: string; self: boolean }) => [i.id, i.self])).toEqual([
      ['instance-a', false],
      ['instance-b', true],
    ]);
    // A task's details name the instance that holds it, whichever instance is asked.
    const [task] = (await a.get('/admin/api/tasks?state=pending&limit=5').expect(200)).body.items;
    const details = (await b.get(`/admin/api/tasks/${task.id}`).expect(200)).body;
    expect(details.holder).toMatchObject({ id: task.lockedBy, live: true });
    expect(details.inThisWheel).toBe(task.lockedBy === 'instance-b');
  });
});
