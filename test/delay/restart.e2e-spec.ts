import { ManualClock } from 'nest-delay';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { createDelayTestApp } from './delay-test-app.js';

const MINUTE = 60_000;

describe('restart', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  it('fires every task of an instance that stopped without draining, none twice, in due order', async () => {
    const clock = new ManualClock();
    const first = await createDelayTestApp(db, { instanceId: 'first', lease: '30s' }, clock);
    const scheduled = [];
    for (let i = 0; i < 60; i++) {
      scheduled.push(
        await first.delay.schedule({ type: 'test.effect', delay: (i % 20) * MINUTE + 1000 }),
      );
    }
    // Three (those due at +1 s) fired before the "crash".
    clock.advance(1000);
    await first.delay.drain();
    const firedBefore = Number((await first.query(`SELECT count(*) FROM effect`))[0].count);
    expect(firedBefore).toBe(3);
    // The process dies: no drain, leases not handed back.
    await first.runtime.shutdown(false);
    await first.close();

    // The app is down for 30 minutes: every remaining task falls due meanwhile.
    clock.advance(30 * MINUTE);
    // Concurrency 1, so that the order of effects is the order of claims.
    const second = await createDelayTestApp(
      db,
      { instanceId: 'second', lease: '30s', concurrency: 1 },
      clock,
    );
    try {
      // The first instance's lease expired long ago: the second takes its tasks at boot.
      await second.delay.drain();
      const rows = await second.query<{ task_id: string; n: number; first_at: Date }>(
        `SELECT task_id, count(*)::int AS n, min(e.id) AS first_effect FROM effect e GROUP BY task_id`,
      );
      expect(rows).toHaveLength(60);
      expect(rows.every((r) => r.n === 1)).toBe(true);
      // Overdue tasks ran in due order.
      const order = await second.query<{ task_id: string }>(
        `SELECT e.task_id FROM effect e JOIN delayed_task t ON t.id = e.task_id WHERE e.instance = 'second' ORDER BY e.id`,
      );
      const dueOrder = await second.query<{ id: string }>(
        `SELECT id FROM delayed_task WHERE id = ANY($1) ORDER BY due_at, id`,
        [order.map((o) => o.task_id)],
      );
      expect(order.map((o) => o.task_id)).toEqual(dueOrder.map((r) => r.id));
      expect(scheduled).toHaveLength(60);
    } finally {
      await second.close();
    }
  });

  it('a restart under the same instance id takes its own tasks back at once', async () => {
    const clock = new ManualClock();
    const first = await createDelayTestApp(db, { instanceId: 'same' }, clock);
    const task = await first.delay.schedule({ type: 'test.effect', delay: MINUTE });
    await first.runtime.shutdown(false);
    await first.close();
    const again = await createDelayTestApp(db, { instanceId: 'same' }, clock);
    try {
      expect(again.runtime.wheel.has(Number(task.id))).toBe(true);
      clock.advance(MINUTE);
      await again.delay.drain();
      expect((await again.delay.get(task.id))?.state).toBe('executed');
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
  async function leftBehind(clock: ManualClock, instanceId: string) {
    const app = await createDelayTestApp(db, { instanceId }, clock);
    for (let i = 0; i < 100; i++)
      await app.delay.schedule({ type: 'test.effect', delay: MINUTE + i * 1000 });
    await app.runtime.shutdown(true);
    await app.close();
  }

  // Leasing each overdue row and loading it into the wheel only to fire it at
  // once would write every row one more time (a third of a backlog's cost).
  it('claims tasks that fell due while no instance ran straight from the table: never leased, each once, in due order', async () => {
    const clock = new ManualClock();
    await leftBehind(clock, 'left');
    clock.advance(10 * MINUTE);
    const back = await createDelayTestApp(
      db,
      { instanceId: 'drainer', loadPageSize: 20, concurrency: 1, batchSize: 30 },
      clock,
    );
    try {
      await back.delay.drain();
      const rows = await back.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM effect GROUP BY task_id`,
      );
      expect(rows).toHaveLength(100);
      expect(rows.every((r) => r.n === 1)).toBe(true);
      const [{ executed, leased }] = await back.query(
        `SELECT count(executed_at)::int AS executed, count(locked_by)::int AS leased FROM delayed_task`,
      );
      expect(executed).toBe(100);
      expect(leased).toBe(0);
      expect(back.runtime.stats).toMatchObject({ executed: 100, held: 0 });
      const order = await back.query<{ task_id: string }>(`SELECT task_id FROM effect ORDER BY id`);
      const dueOrder = await back.query<{ id: string }>(
        `SELECT id FROM delayed_task ORDER BY due_at, id`,
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
    await leftBehind(clock, 'gone');

    let openGate: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    let pages = 0;
    const booting = createDelayTestApp(
      db,
      { instanceId: 'back', loadPageSize: 20 },
      clock,
      [],
      (runtime) => {
        const leaseDue = runtime.store.leaseDue.bind(runtime.store);
        runtime.store.leaseDue = async (...args: Parameters<typeof leaseDue>) => {
          if (++pages > 1) await gate;
          return leaseDue(...args);
        };
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
      expect(booted.runtime.wheel.size).toBe(20);
      clock.advance(MINUTE + 19_000); // the first page's tasks fall due
      const effects = async () =>
        Number((await booted.query(`SELECT count(*) FROM effect`))[0].count);
      for (let waited = 0; (await effects()) < 20 && waited < 10_000; waited += 10)
        await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await effects()).toBe(20);
      expect(pages).toBe(2); // the second page is waiting at the gate

      openGate();
      clock.advance(2 * MINUTE);
      await booted.delay.drain();
      const rows = await booted.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM effect GROUP BY task_id`,
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

  it('leaves the task pending, and the next instance runs it exactly once', async () => {
    const clock = new ManualClock();
    const first = await createDelayTestApp(
      db,
      { instanceId: 'hangs', shutdownTimeout: '200ms' },
      clock,
    );
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    // The handler writes its effect, then never returns: the process "dies" mid-transaction.
    first.behaviour.afterEffect = () => {
      entered();
      return new Promise<void>(() => undefined);
    };
    const task = await first.delay.schedule({ type: 'test.effect', delay: 1000 });
    clock.advance(1000);
    void first.delay.drain().catch(() => undefined);
    await inHandler;
    await first.close();

    const second = await createDelayTestApp(db, { instanceId: 'hangs' }, clock);
    try {
      await second.delay.drain();
      expect(await second.delay.get(task.id)).toMatchObject({ state: 'executed', attempts: 1 });
      expect(
        (
          await second.query(`SELECT count(*)::int AS n FROM effect WHERE task_id = $1`, [task.id])
        )[0].n,
      ).toBe(1);
      expect(second.behaviour.calls).toBe(1);
    } finally {
      await second.close();
    }
  });
});
