import pg from 'pg';
import { ManualClock } from 'nest-delay/testing';
// Package-internal: the boot test slows the window load down, which no public API can do.
import { DelayRuntime } from '../../packages/nest-delay/src/runtime/delay.runtime.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { MINUTE, createDelayTestApp } from './delay-test-app.js';

describe('restart', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  it('fires every task of an instance that stopped without draining, none twice, in due order', async () => {
    const clock = new ManualClock();
    const first = await createDelayTestApp(db, { instanceId: 'first', lease: '30s' }, { clock });
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) {
      const task = await first.delay.schedule({
        type: 'test.effect',
        delay: (i % 20) * MINUTE + 1000,
      });
      ids.push(task.id);
    }
    // Three (those due at +1 s) fired before the "crash".
    const report = await first.tester.advance(1000);
    expect(report.byType['test.effect']?.executed).toBe(3);
    const firedBefore = await first.query<{ task_id: string }>(
      `SELECT task_id::text FROM effect WHERE task_id = ANY($1) ORDER BY task_id`,
      [ids],
    );
    expect(firedBefore.map((r) => r.task_id)).toEqual([ids[0], ids[20], ids[40]]);
    // The process dies: nothing more runs, leases not handed back.
    await first.tester.crash();
    const [{ leased }] = await first.query(
      `SELECT count(*)::int AS leased FROM delayed_task WHERE id = ANY($1) AND locked_by = 'first'
         AND executed_at IS NULL`,
      [ids],
    );
    expect(leased).toBe(57);
    await first.close();

    // The app is down for 30 minutes: every remaining task falls due meanwhile.
    clock.advance(30 * MINUTE);
    // Concurrency 1, so that the order of effects is the order of claims.
    const second = await createDelayTestApp(
      db,
      { instanceId: 'second', lease: '30s', concurrency: 1 },
      { clock },
    );
    try {
      // The first instance's lease expired long ago: the second takes its tasks at boot.
      await second.tester.runDue();
      const rows = await second.query<{ task_id: string; n: number }>(
        `SELECT task_id::text, count(*)::int AS n FROM effect WHERE task_id = ANY($1) GROUP BY task_id`,
        [ids],
      );
      expect(rows).toHaveLength(60);
      expect(rows.every((r) => r.n === 1)).toBe(true);
      // Overdue tasks ran in due order.
      const order = await second.query<{ task_id: string }>(
        `SELECT e.task_id::text FROM effect e WHERE e.instance = 'second' AND e.task_id = ANY($1)
         ORDER BY e.id`,
        [ids],
      );
      expect(order).toHaveLength(57);
      const dueOrder = await second.query<{ id: string }>(
        `SELECT id FROM delayed_task WHERE id = ANY($1) ORDER BY due_at, id`,
        [order.map((o) => o.task_id)],
      );
      expect(order.map((o) => o.task_id)).toEqual(dueOrder.map((r) => r.id));
    } finally {
      await second.close();
    }
  });

  it('a restart under the same instance id takes its own tasks back at once', async () => {
    const clock = new ManualClock();
    const first = await createDelayTestApp(db, { instanceId: 'same' }, { clock });
    const task = await first.delay.schedule({ type: 'test.effect', delay: MINUTE });
    expect(first.tester.isHeld(task.id)).toBe(true);
    await first.tester.crash();
    await first.close();
    const again = await createDelayTestApp(db, { instanceId: 'same' }, { clock });
    try {
      expect(again.tester.isHeld(task.id)).toBe(true);
      await again.tester.advance(MINUTE);
      expect((await again.delay.get({ id: task.id }))?.state).toBe('executed');
      expect(await again.effects(task.id)).toBe(1);
    } finally {
      await again.close();
    }
  });
});

describe('a boot with much to do', () => {
  let db: TestDatabase;
  beforeEach(async () => {
    db = await createTestDatabase();
  });
  afterEach(() => db?.drop());

  /** 100 tasks from an instance that left cleanly (its leases handed back), due from +1 min. */
  async function leftBehind(clock: ManualClock, instanceId: string): Promise<string[]> {
    const app = await createDelayTestApp(db, { instanceId }, { clock });
    const ids: string[] = [];
    for (let i = 0; i < 100; i++)
      ids.push((await app.delay.schedule({ type: 'test.effect', delay: MINUTE + i * 1000 })).id);
    expect(ids.every((id) => app.tester.isHeld(id))).toBe(true);
    await app.close();
    // Its pool is closed: look with a connection of our own.
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query(
        `SELECT count(locked_by)::int AS leased FROM delayed_task WHERE id = ANY($1)`,
        [ids],
      );
      expect(rows[0].leased).toBe(0);
    } finally {
      await client.end();
    }
    return ids;
  }

  // Leasing each overdue row and loading it into the wheel only to fire it at
  // once would write every row one more time (a third of a backlog's cost).
  it('claims tasks that fell due while no instance ran straight from the table: never leased, each once, in due order', async () => {
    const clock = new ManualClock();
    const ids = await leftBehind(clock, 'left');
    clock.advance(10 * MINUTE);
    const back = await createDelayTestApp(
      db,
      { instanceId: 'drainer', loadPageSize: 20, concurrency: 1, batchSize: 30 },
      { clock },
    );
    try {
      await back.tester.runDue();
      const rows = await back.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM effect WHERE task_id = ANY($1) GROUP BY task_id`,
        [ids],
      );
      expect(rows).toHaveLength(100);
      expect(rows.every((r) => r.n === 1)).toBe(true);
      const [{ executed, leased }] = await back.query(
        `SELECT count(executed_at)::int AS executed, count(locked_by)::int AS leased
         FROM delayed_task WHERE id = ANY($1)`,
        [ids],
      );
      expect(executed).toBe(100);
      expect(leased).toBe(0);
      // Counted from boot: the drain may have begun before runDue was called.
      expect(back.delay.stats()).toMatchObject({ executed: 100, held: 0, drainingBacklog: false });
      const order = await back.query<{ task_id: string }>(
        `SELECT task_id::text FROM effect WHERE task_id = ANY($1) ORDER BY id`,
        [ids],
      );
      const dueOrder = await back.query<{ id: string }>(
        `SELECT id FROM delayed_task WHERE id = ANY($1) ORDER BY due_at, id`,
        [ids],
      );
      expect(order.map((o) => o.task_id)).toEqual(dueOrder.map((r) => r.id));
    } finally {
      await back.close();
    }
  });

  // Boot leases one page of the window and starts the wheel; the rest loads
  // behind it. Were boot to wait for the whole window, this test's held-back
  // second page would keep it from ever finishing.
  it('starts the wheel after the first page of the window; the rest loads behind it', async () => {
    const clock = new ManualClock();
    const ids = await leftBehind(clock, 'gone');

    let openGate: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    let pages = 0;
    const booting = createDelayTestApp(
      db,
      // A lease long enough that no heartbeat or loader round falls within
      // the test's 80 s: the only loads are boot's own (a round would start a
      // second load loop beside the background one, and ask for a third page).
      { instanceId: 'back', loadPageSize: 20, lease: '10m' },
      {
        clock,
        beforeInit: (moduleRef) => {
          const loader = moduleRef.get(DelayRuntime).loader as unknown as {
            loadPage(): Promise<boolean>;
          };
          const loadPage = loader.loadPage.bind(loader);
          expect(typeof loadPage).toBe('function');
          loader.loadPage = async () => {
            if (++pages > 1) await gate;
            return loadPage();
          };
        },
      },
    );
    let timer: NodeJS.Timeout | undefined;
    const booted = await Promise.race([
      booting,
      new Promise<undefined>((resolve) => (timer = setTimeout(resolve, 10_000, undefined))),
    ]);
    clearTimeout(timer);
    if (!booted) {
      openGate();
      await (await booting).close();
      throw new Error('boot waited for the whole window before starting the wheel');
    }
    try {
      expect(booted.tester.held).toBe(20);
      expect(ids.slice(0, 20).every((id) => booted.tester.isHeld(id))).toBe(true);
      clock.advance(MINUTE + 19_000); // the first page's tasks fall due
      const effects = async () =>
        (
          await booted.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM effect WHERE task_id = ANY($1)`,
            [ids],
          )
        )[0].n;
      for (let waited = 0; (await effects()) < 20 && waited < 10_000; waited += 10)
        await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await effects()).toBe(20);
      expect(pages).toBe(2); // the second page is waiting at the gate

      openGate();
      await booted.tester.advance(2 * MINUTE);
      const rows = await booted.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM effect WHERE task_id = ANY($1) GROUP BY task_id`,
        [ids],
      );
      expect(rows).toHaveLength(100);
      expect(rows.every((r) => r.n === 1)).toBe(true);
    } finally {
      openGate();
      await booted.close();
    }
  }, 60_000);
});

describe('a crash between claim and commit', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  /** An instance whose handlers write their effect, then never return (cut off at stop). */
  async function hangingInstance(instanceId: string, clock: ManualClock) {
    const app = await createDelayTestApp(db, { instanceId, shutdownTimeout: '200ms' }, { clock });
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    app.behaviour.afterEffect = () => {
      entered();
      return new Promise<void>(() => undefined);
    };
    return { app, inHandler };
  }

  it('leaves the task pending, uncharged (the process chose to stop it), and the next instance runs it exactly once', async () => {
    const clock = new ManualClock();
    // The handler writes its effect, then never returns: the process "dies" mid-transaction.
    const { app: first, inHandler } = await hangingInstance('hangs', clock);
    const task = await first.delay.schedule({ type: 'test.effect', delay: 1000 });
    void first.tester.advance(1000).catch(() => undefined);
    await inHandler;
    await first.close();

    const second = await createDelayTestApp(db, { instanceId: 'hangs' }, { clock });
    try {
      await second.tester.runDue();
      // Cut off by its own shutdown, not killed by its task: that attempt is not charged.
      const done = await second.delay.get({ id: task.id });
      expect(done).toMatchObject({ state: 'executed', attempts: 1 });
      expect(await second.query(`SELECT * FROM delay_attempt`)).toEqual([]);
      expect(await second.effects(task.id)).toBe(1);
      expect(second.behaviour.calls).toBe(1);
    } finally {
      await second.close();
    }
  });

  it('a stop hands back every task it can at once; one whose row another transaction holds waits for the lease', async () => {
    const clock = new ManualClock();
    const { app: first, inHandler } = await hangingInstance('cuts', clock);
    const hung = await first.delay.schedule({ type: 'test.effect', delay: 1000 });
    const later = (
      await first.delay.scheduleMany(
        Array.from({ length: 5 }, () => ({ type: 'test.effect', delay: 60_000 })),
      )
    ).map((result) => result.id);
    void first.tester.advance(1000).catch(() => undefined);
    await inHandler;
    // A transaction elsewhere holds one row (as a cut-off claim's locks can outlive it a moment).
    const locker = new pg.Client({ connectionString: db.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query(`SELECT id FROM delayed_task WHERE id = $1 FOR UPDATE`, [later[0]]);
    await first.close();
    const leased = async () =>
      (
        await locker.query<{ id: string }>(
          `SELECT id::text FROM delayed_task WHERE locked_by = 'cuts' ORDER BY id`,
        )
      ).rows.map((row) => row.id);
    try {
      // The hung claim was cut off and rolled back; all but the held row went back at once.
      expect(await leased()).toEqual([later[0]]);
      expect(
        (await locker.query(`SELECT id FROM delay_instance WHERE id = 'cuts'`)).rows,
      ).toHaveLength(1);
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }

    const second = await createDelayTestApp(db, { instanceId: 'after-cuts' }, { clock });
    try {
      // The hung task runs at once, not a lease later, and once.
      await second.tester.runDue();
      expect(await second.delay.get({ id: hung.id })).toMatchObject({ state: 'executed' });
      expect(await second.effects(hung.id)).toBe(1);
      // The held one is taken over when the lease of its instance runs out.
      clock.advance(31_000);
      await second.delay['runtime'].lease.renew();
      expect(
        await second.query(`SELECT locked_by FROM delayed_task WHERE id = $1`, [later[0]]),
      ).not.toEqual([{ locked_by: 'cuts' }]);
    } finally {
      await second.close();
    }
  });
});
