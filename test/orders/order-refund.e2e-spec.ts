import { DelayService } from 'nest-delay';
import {
  AUTO_REVIEW_TASK,
  CLOSE_UNPAID_TASK,
  NOTIFY_CLOSED_TASK,
} from '../../src/orders/order-tasks.js';
import type { TestApp } from '../support/app-factory.js';
import { MINUTE, OrdersApi, useOrdersApp } from './orders-api.js';

/**
 * A refund drops every task the order still has waiting, by its entity
 * (`order:<id>`), whatever their keys, in the refund's own transaction: all
 * cancelled when it commits, all still pending (and still run) when it fails.
 */
const app = useOrdersApp();
let t: TestApp;
let api: OrdersApi;
beforeAll(() => {
  ({ t, api } = app);
});

/** The third task: a customer notification, under its own key, of the order's entity. */
const FOLLOW_UP = NOTIFY_CLOSED_TASK;

/** The order's tasks by type, with their state. */
async function tasksOf(orderId: string): Promise<Record<string, string>> {
  const rows = await api.query<{ type: string; state: string }>(
    `SELECT type, CASE WHEN executed_at IS NOT NULL THEN 'executed'
                       WHEN cancelled_at IS NOT NULL THEN 'cancelled'
                       WHEN dead_at IS NOT NULL THEN 'dead' ELSE 'pending' END AS state
     FROM delayed_task WHERE entity = $1 ORDER BY id`,
    [`order:${orderId}`],
  );
  return Object.fromEntries(rows.map((row) => [row.type, row.state]));
}

/**
 * An order with three pending tasks of its entity: its close, its review and
 * a notification. The app scheduled the one its state calls for; the test adds
 * the other two as other code paths would, through DelayService, with the
 * order's entity and their own keys.
 */
async function orderWithThreeTasks(state: 'PENDING_PAYMENT' | 'FINISHED') {
  const order = await api.createOrder();
  const delay = t.app.get(DelayService, { strict: false });
  const entity = `order:${order.id}`;
  const payload = { orderId: order.id };
  if (state === 'FINISHED') {
    await api.action(order.id, 'pay').expect(200);
    await api.action(order.id, 'finish').expect(200);
    await delay.schedule({
      type: CLOSE_UNPAID_TASK,
      key: `order:${order.id}:close-unpaid`,
      entity,
      payload,
      delay: '30m',
    });
  } else {
    await delay.schedule({
      type: AUTO_REVIEW_TASK,
      key: `order:${order.id}:auto-review`,
      entity,
      payload,
      delay: '7d',
    });
  }
  await delay.schedule({
    type: FOLLOW_UP,
    key: `order:${order.id}:notify-closed`,
    entity,
    payload,
    delay: '2d',
  });
  expect(await tasksOf(order.id)).toEqual({
    [CLOSE_UNPAID_TASK]: 'pending',
    [AUTO_REVIEW_TASK]: 'pending',
    [FOLLOW_UP]: 'pending',
  });
  return order;
}

it('the app sets the order entity on the tasks it schedules', async () => {
  const order = await api.createOrder();
  const [task] = await api.tasks(`order:${order.id}:close-unpaid`);
  const [row] = await api.query(`SELECT entity FROM delayed_task WHERE id = $1`, [task.id]);
  expect(row.entity).toBe(`order:${order.id}`);
});

it('cancels the close, the review and the notification in the refund transaction; none runs', async () => {
  const order = await orderWithThreeTasks('FINISHED');
  const refunded = await api.action(order.id, 'refund').expect(200);
  expect(refunded.body).toMatchObject({ id: order.id, status: 'REFUNDED', autoReviewAt: null });
  expect(await tasksOf(order.id)).toEqual({
    [CLOSE_UNPAID_TASK]: 'cancelled',
    [AUTO_REVIEW_TASK]: 'cancelled',
    [FOLLOW_UP]: 'cancelled',
  });
  const history = await api.history(order.id);
  expect(history[history.length - 1]).toMatchObject({
    type: 'REFUNDED',
    data: { cancelledTasks: 3 },
  });
  // Past the close's time (the wheel held it): it does not run.
  await api.advance(31 * MINUTE);
  expect(await api.get(order.id)).toMatchObject({ status: 'REFUNDED', reviewStatus: 'NONE' });
  expect((await tasksOf(order.id))[CLOSE_UNPAID_TASK]).toBe('cancelled');
});

it('a refund the order state refuses (409) rolls the cancels back; the tasks still run', async () => {
  const order = await orderWithThreeTasks('PENDING_PAYMENT');
  const refused = await api.action(order.id, 'refund').expect(409);
  expect(refused.body.message).toMatch(/PENDING_PAYMENT.*PAID or FINISHED/);
  expect(await tasksOf(order.id)).toEqual({
    [CLOSE_UNPAID_TASK]: 'pending',
    [AUTO_REVIEW_TASK]: 'pending',
    [FOLLOW_UP]: 'pending',
  });
  // Still in the wheel as well as the table: the close runs at its time.
  await api.advance(30 * MINUTE);
  expect(await api.get(order.id)).toMatchObject({
    status: 'CLOSED',
    closeReason: 'PAYMENT_TIMEOUT',
  });
});

it('a refund that fails after its writes (the database refuses its event) rolls everything back', async () => {
  const order = await orderWithThreeTasks('FINISHED');
  await api.query(`
    CREATE FUNCTION refuse_refund() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'refunds are refused by this test'; END $$`);
  await api.query(`
    CREATE TRIGGER refuse_refund BEFORE INSERT ON order_event
    FOR EACH ROW WHEN (NEW.type = 'REFUNDED') EXECUTE FUNCTION refuse_refund()`);
  try {
    const failed = await api.action(order.id, 'refund');
    expect(failed.status).toBeGreaterThanOrEqual(500);
  } finally {
    await api.query(`DROP TRIGGER refuse_refund ON order_event`);
    await api.query(`DROP FUNCTION refuse_refund()`);
  }
  expect((await api.get(order.id)).status).toBe('FINISHED');
  expect(await tasksOf(order.id)).toEqual({
    [CLOSE_UNPAID_TASK]: 'pending',
    [AUTO_REVIEW_TASK]: 'pending',
    [FOLLOW_UP]: 'pending',
  });
});

it('answers 404 for an unknown order, and changes no task', async () => {
  const unknown = '6f1c2a34-5b6d-4e7f-8a9b-0c1d2e3f4a5b';
  await api.action(unknown, 'refund').expect(404);
});
