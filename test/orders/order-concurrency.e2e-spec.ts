import pg from 'pg';
import type { TestApp } from '../support/app-factory.js';
import { describeWithServer, type TestDatabase } from '../support/test-database.js';
import { HOUR, MINUTE, OrdersApi, SECOND, type OrderJson, useOrdersApp } from './orders-api.js';

const app = useOrdersApp();
let t: TestApp;
let api: OrdersApi;
let db: TestDatabase;
beforeAll(() => {
  ({ t, api, db } = app);
});

/** Lets `n` turns of the event loop pass, so that requests already sent get that far. */
async function yieldTurns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Creates `n` orders at the same instant. */
async function createOrders(n: number): Promise<OrderJson[]> {
  const orders: OrderJson[] = [];
  for (let i = 0; i < n; i++)
    orders.push(await api.createOrder({ userId: 'racer', amountCents: 100 + i }));
  return orders;
}

describe('pay racing the close-unpaid task on one order', () => {
  it('ends every order either PAID or CLOSED, never both, with a matching task and history', async () => {
    const orders = await createOrders(16);
    // Pays sent at staggered moments around the deadline firing.
    const pays = orders.map(async (order, i) => {
      await yieldTurns(i);
      return api.action(order.id, 'pay');
    });
    await yieldTurns(8);
    t.clock.advance(30 * MINUTE);
    const responses = await Promise.all(pays);
    await t.delay.runDue();
    // A task the claim found locked by a pay is looked at again a tick later;
    // the notifications the closes scheduled run too (see advanceToAndLoad).
    await api.advanceAndLoad(SECOND);

    const outcomes: string[] = [];
    for (const [i, order] of orders.entries()) {
      const now = await api.get(order.id);
      const history = (await api.history(order.id)).map((e) => `${e.type}/${e.by}`);
      const [task] = await api.tasks(`order:${order.id}:close-unpaid`);
      if (responses[i].status === 200) {
        expect(now).toMatchObject({
          status: 'PAID',
          closeReason: null,
          closedAt: null,
          paymentDeadline: null,
        });
        expect(responses[i].body).toEqual(now);
        expect(history).toEqual(['CREATED/user', 'PAID/user']);
        expect(task.state).toBe('cancelled');
        expect(await api.tasks(`order:${order.id}:notify-closed`)).toEqual([]);
      } else {
        expect(responses[i].status).toBe(409);
        expect(responses[i].body.message).toContain('CLOSED');
        expect(now).toMatchObject({
          status: 'CLOSED',
          closeReason: 'PAYMENT_TIMEOUT',
          paidAt: null,
        });
        // The customer is told once, by the notification the close scheduled as it committed.
        expect(history).toEqual(['CREATED/user', 'CLOSED/system', 'CUSTOMER_NOTIFIED/system']);
        expect(task.state).toBe('executed');
        expect(await api.tasks(`order:${order.id}:notify-closed`)).toMatchObject([
          { state: 'executed' },
        ]);
      }
      outcomes.push(now.status);
    }
    expect(outcomes).toHaveLength(orders.length);
    expect(
      (
        await api.query(
          `SELECT count(*)::int AS n FROM delayed_task WHERE key LIKE 'order:%:close-unpaid' AND executed_at IS NULL AND cancelled_at IS NULL`,
        )
      )[0].n,
    ).toBe(0);
  });
});

describe('review racing the auto-review task on one order', () => {
  it('keeps exactly one review per order: the user’s or the automatic one', async () => {
    const orders = await createOrders(10);
    for (const order of orders) {
      await api.action(order.id, 'pay').expect(200);
      await api.action(order.id, 'finish').expect(200);
    }
    t.clock.advance(48 * HOUR - 1);
    const reviews = orders.map(async (order, i) => {
      await yieldTurns(i);
      return api.action(order.id, 'review', { stars: 2 });
    });
    await yieldTurns(5);
    t.clock.advance(1);
    const responses = await Promise.all(reviews);
    await t.delay.runDue();
    await api.advance(SECOND);

    for (const [i, order] of orders.entries()) {
      const now = await api.get(order.id);
      const events = (await api.history(order.id)).map((e) => e.type);
      expect(events.filter((type) => type === 'REVIEWED' || type === 'AUTO_REVIEWED')).toHaveLength(
        1,
      );
      if (responses[i].status === 200) {
        expect(now).toMatchObject({ reviewStatus: 'REVIEWED', stars: 2 });
      } else {
        expect(responses[i].status).toBe(409);
        expect(now).toMatchObject({ reviewStatus: 'AUTO_REVIEWED', stars: 5 });
      }
    }
  });
});

describe('a refund racing the auto-review task on one order', () => {
  it('never rates a refunded order, and leaves it no pending task', async () => {
    const orders = await createOrders(10);
    for (const order of orders) {
      await api.action(order.id, 'pay').expect(200);
      await api.action(order.id, 'finish').expect(200);
    }
    t.clock.advance(48 * HOUR - 1);
    // Sent over as many turns of the event loop as the clock's step waits: some
    // refunds reach the order before the task fires, some after.
    const refunds = orders.map(async (order, i) => {
      await yieldTurns(i * 4);
      return api.action(order.id, 'refund');
    });
    await yieldTurns(20);
    t.clock.advance(1);
    const responses = await Promise.all(refunds);
    await t.delay.runDue();
    await api.advance(SECOND);

    for (const [i, order] of orders.entries()) {
      // A finished order is refundable whether or not it was rated first.
      expect(responses[i].status).toBe(200);
      const events = (await api.history(order.id)).map((e) => e.type);
      const refunded = events.indexOf('REFUNDED');
      expect(refunded).toBeGreaterThan(-1);
      // Rated before the refund, or never: the handler re-reads the order under its lock.
      expect(events.slice(refunded).filter((type) => type === 'AUTO_REVIEWED')).toEqual([]);
      expect(events.filter((type) => type === 'AUTO_REVIEWED').length).toBeLessThanOrEqual(1);
      const pending = await api.query(
        `SELECT type FROM delayed_task
         WHERE entity = $1 AND executed_at IS NULL AND cancelled_at IS NULL AND dead_at IS NULL`,
        [`order:${order.id}`],
      );
      expect(pending).toEqual([]);
    }
  });
});

/**
 * The two interleavings of a pay and a firing close-unpaid task, forced with a
 * third connection that holds the order's row lock. Needs a server: PGlite
 * serves one connection at a time.
 */
describeWithServer('pay and close-unpaid interleaved by hand', () => {
  let blocker: pg.Client;

  beforeEach(async () => {
    blocker = new pg.Client({ connectionString: db.url });
    await blocker.connect();
  });

  afterEach(async () => {
    await blocker.end();
  });

  async function lockOrderElsewhere(id: string): Promise<void> {
    await blocker.query('BEGIN');
    await blocker.query('SELECT id FROM orders WHERE id = $1 FOR UPDATE', [id]);
  }

  /** Waits until `n` sessions of this database wait for a lock: a state, not a time. */
  async function lockWaiters(n: number): Promise<void> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const { rows } = await blocker.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      if (rows[0].n >= n) return;
      if (Date.now() > deadline) {
        // What the engine and the sessions were doing, for a failure that is hard to reproduce.
        const sessions = await blocker.query(
          `SELECT pid, state, wait_event_type, wait_event, left(query, 40) AS query, now() - state_change AS since, backend_xid FROM pg_stat_activity
           WHERE datname = current_database() AND pid <> pg_backend_pid()`,
        );
        throw new Error(
          `expected ${n} lock waiter(s), saw ${rows[0].n}; engine ${JSON.stringify(
            t.delay.delay.stats(),
          )}; sessions ${JSON.stringify(sessions.rows)}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  it('the task first: it closes the order, and the pay that waited on it gets a 409', async () => {
    const order = await api.createOrder();
    await lockOrderElsewhere(order.id);
    t.clock.advance(30 * MINUTE);
    const drained = t.delay.runDue();
    await lockWaiters(1); // the handler, holding the claimed task, waits for the order
    const pay = api.action(order.id, 'pay').then((res) => res);
    await lockWaiters(2); // the pay waits for the task row the claim holds
    await blocker.query('COMMIT');

    const res = await pay;
    await drained;
    await api.advanceAndLoad(0);
    expect(res.status).toBe(409);
    expect(await api.get(order.id)).toMatchObject({
      status: 'CLOSED',
      closeReason: 'PAYMENT_TIMEOUT',
    });
    expect((await api.history(order.id)).map((e) => e.type)).toEqual([
      'CREATED',
      'CLOSED',
      'CUSTOMER_NOTIFIED',
    ]);
    expect(await api.tasks(`order:${order.id}:close-unpaid`)).toMatchObject([
      { state: 'executed' },
    ]);
  });

  it('the pay first: it cancels the task, and the claim passes the task by', async () => {
    const order = await api.createOrder();
    await lockOrderElsewhere(order.id);
    const pay = api.action(order.id, 'pay').then((res) => res);
    await lockWaiters(1); // the pay, holding the cancelled task row, waits for the order
    t.clock.advance(30 * MINUTE);
    await t.delay.runDue(); // the claim skips the locked task
    await blocker.query('COMMIT');

    expect((await pay).status).toBe(200);
    await api.advance(SECOND);
    expect(await api.get(order.id)).toMatchObject({ status: 'PAID', closeReason: null });
    expect((await api.history(order.id)).map((e) => e.type)).toEqual(['CREATED', 'PAID']);
    expect(await api.tasks(`order:${order.id}:close-unpaid`)).toMatchObject([
      { state: 'cancelled' },
    ]);
    expect(await api.tasks(`order:${order.id}:notify-closed`)).toEqual([]);
  });
});
