import { FakeNotificationProvider } from '../../src/notifications/fake-notification-provider.js';
import type { TestApp } from '../support/app-factory.js';
import { MINUTE, OrdersApi, SECOND, useOrdersApp } from './orders-api.js';

// 3 a second rather than the default 20, so that a burst of 10 shows the pacing.
const RATE = 3;
const app = useOrdersApp({
  NOTIFY_RATE_PER_SECOND: String(RATE),
  ORDER_IDEMPOTENCY_PURGE_EVERY: 'off',
});
let t: TestApp;
let api: OrdersApi;
let provider: FakeNotificationProvider;
beforeAll(() => {
  ({ t, api } = app);
  provider = t.app.get(FakeNotificationProvider, { strict: false });
});
beforeEach(() => provider.reset());

const sentTo = (orderId: string) =>
  provider.sent.filter((message) => message.idempotencyKey === `order:${orderId}:notify-closed`);

describe('the customer notification after a payment timeout', () => {
  it('is sent once per closed order, recorded in its history, and never for a cancelled or paid one', async () => {
    const unpaid = await api.createOrder({ userId: 'carol', amountCents: 2599 });
    const cancelled = await api.createOrder();
    const paid = await api.createOrder();
    await api.action(cancelled.id, 'cancel').expect(200);
    await api.action(paid.id, 'pay').expect(200);

    await api.advanceAndLoad(30 * MINUTE);
    expect(provider.sent).toEqual([
      {
        to: 'carol',
        template: 'order-closed-unpaid',
        subject: `Your order ${unpaid.id} was closed`,
        text: `Your order ${unpaid.id} of 25.99 was closed because it was not paid in time.`,
        idempotencyKey: `order:${unpaid.id}:notify-closed`,
        messageId: expect.any(String),
        atMs: Date.parse(unpaid.paymentDeadline),
      },
    ]);
    const history = await api.history(unpaid.id);
    expect(history.map((e) => [e.type, e.by])).toEqual([
      ['CREATED', 'user'],
      ['CLOSED', 'system'],
      ['CUSTOMER_NOTIFIED', 'system'],
    ]);
    expect(history[2]).toMatchObject({
      at: unpaid.paymentDeadline,
      data: { template: 'order-closed-unpaid', messageId: provider.sent[0].messageId },
    });
    expect(await api.tasks(`order:${unpaid.id}:notify-closed`)).toMatchObject([
      { type: 'order.notify-closed', state: 'executed' },
    ]);

    // Nothing more, however long we wait; nothing at all for the others.
    await api.advanceAndLoad(48 * 60 * MINUTE);
    expect(sentTo(unpaid.id)).toHaveLength(1);
    expect(provider.attemptsAtMs).toHaveLength(1);
    expect(await api.tasks(`order:${cancelled.id}:notify-closed`)).toEqual([]);
    expect(await api.tasks(`order:${paid.id}:notify-closed`)).toEqual([]);
  });

  it(`starts at most ${RATE} sends in any second across a burst, while every close runs on time`, async () => {
    const orders = [];
    for (let i = 0; i < 10; i++)
      orders.push(await api.createOrder({ userId: `u${i}`, amountCents: 100 }));
    const deadline = Date.parse(orders[0].paymentDeadline);
    // Every order was created at the same instant (the clock did not move): one due time for all.
    expect(new Set(orders.map((order) => order.paymentDeadline)).size).toBe(1);

    await api.advanceToAndLoad(deadline);
    for (const order of orders) {
      expect(await api.get(order.id)).toMatchObject({
        status: 'CLOSED',
        closedAt: order.paymentDeadline,
      });
    }
    expect(provider.sent).toHaveLength(RATE);
    for (let ms = 250; ms <= 5 * SECOND; ms += 250) await api.advanceTo(deadline + ms);

    expect(new Set(provider.sent.map((message) => message.to))).toEqual(
      new Set(orders.map((order) => order.userId)),
    );
    expect(provider.sent).toHaveLength(10);
    // The most starts in any window of one second, by the app's clock.
    const starts = provider.attemptsAtMs;
    const busiest = Math.max(
      ...starts.map((from) => starts.filter((at) => at >= from && at < from + SECOND).length),
    );
    expect(busiest).toBe(RATE);
    // Ten at three a second: the last starts three seconds after the first.
    expect(Math.max(...starts) - Math.min(...starts)).toBe(3 * SECOND);
    // The database agrees: each CUSTOMER_NOTIFIED event at the time its send started.
    const events = await api.query<{ at: Date }>(
      `SELECT at FROM order_event WHERE type = 'CUSTOMER_NOTIFIED' AND order_id = ANY($1) ORDER BY at`,
      [orders.map((order) => order.id)],
    );
    expect(events.map((e) => e.at.getTime())).toEqual([...starts].sort((a, b) => a - b));
  });

  it('retries a send the provider refused, then records it once', async () => {
    const order = await api.createOrder({ userId: 'dave', amountCents: 500 });
    provider.failNext(2, 'provider unavailable (503)');

    await api.advanceAndLoad(30 * MINUTE);
    expect(await api.get(order.id)).toMatchObject({ status: 'CLOSED' });
    const [task] = await t.delay.scheduled({ key: `order:${order.id}:notify-closed` });
    expect(task).toMatchObject({
      attempts: 1,
      lastError: expect.stringContaining('provider unavailable (503) (to dave)'),
    });
    // The failed attempt wrote nothing: its transaction rolled back.
    expect((await api.history(order.id)).map((e) => e.type)).toEqual(['CREATED', 'CLOSED']);

    // The engine's backoff (1 s, then 2 s, with jitter) by the clock: step until it is sent.
    for (let step = 0; step < 20 && provider.sent.length === 0; step++) await api.advance(SECOND);
    expect(provider.attemptsAtMs).toHaveLength(3);
    expect(sentTo(order.id)).toHaveLength(1);
    expect(await api.tasks(`order:${order.id}:notify-closed`)).toMatchObject([
      { state: 'executed' },
    ]);
    const [row] = await api.query<{ attempts: number }>(
      `SELECT attempts FROM delayed_task WHERE key = $1`,
      [`order:${order.id}:notify-closed`],
    );
    expect(row.attempts).toBe(3);
    expect((await api.history(order.id)).map((e) => e.type)).toEqual([
      'CREATED',
      'CLOSED',
      'CUSTOMER_NOTIFIED',
    ]);
  });
});
