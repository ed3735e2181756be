import type { TestApp } from '../support/app-factory.js';
import { HOUR, MINUTE, OrdersApi, SECOND, useOrdersApp } from './orders-api.js';

const app = useOrdersApp();
let t: TestApp;
let api: OrdersApi;
beforeAll(() => {
  ({ t, api } = app);
});

describe('payment timeout', () => {
  it('closes an unpaid order 30 minutes after creation, not one second earlier', async () => {
    const created = await api.createOrder({ userId: 'alice', amountCents: 2500 });
    expect(created).toMatchObject({
      userId: 'alice',
      amountCents: 2500,
      status: 'PENDING_PAYMENT',
      closeReason: null,
      reviewStatus: 'NONE',
      stars: null,
      comment: null,
      createdAt: new Date(t.clock.now()).toISOString(),
      paymentDeadline: new Date(t.clock.now() + 30 * MINUTE).toISOString(),
      paidAt: null,
      closedAt: null,
      autoReviewAt: null,
    });
    await t.delay.assertScheduled({
      type: 'order.close-unpaid',
      key: `order:${created.id}:close-unpaid`,
      payload: { orderId: created.id },
      runAt: new Date(created.paymentDeadline),
    });

    const early = await api.advance(29 * MINUTE + 59 * SECOND);
    expect(early.byType['order.close-unpaid']).toBeUndefined();
    expect(await api.get(created.id)).toMatchObject({
      status: 'PENDING_PAYMENT',
      closeReason: null,
    });

    const onTime = await api.advance(SECOND);
    expect(onTime.byType['order.close-unpaid']).toMatchObject({ executed: 1, failed: 0 });
    // The customer's notification, which the close scheduled (order-notification.e2e-spec.ts).
    await api.advanceAndLoad(0);
    const closed = await api.get(created.id);
    expect(closed).toMatchObject({
      status: 'CLOSED',
      closeReason: 'PAYMENT_TIMEOUT',
      closedAt: created.paymentDeadline,
      paymentDeadline: null,
    });
    const history = await api.history(created.id);
    expect(history.map((e) => [e.type, e.by])).toEqual([
      ['CREATED', 'user'],
      ['CLOSED', 'system'],
      ['CUSTOMER_NOTIFIED', 'system'],
    ]);
    expect(history[1]).toMatchObject({
      at: created.paymentDeadline,
      data: { reason: 'PAYMENT_TIMEOUT' },
    });
    expect(await api.tasks(`order:${created.id}:close-unpaid`)).toMatchObject([
      { state: 'executed' },
    ]);
  });
});

describe('auto-review', () => {
  it('rates a finished order 5 stars 48 hours after finishing, exactly once', async () => {
    const { id } = await api.createOrder();
    const paid = (await api.action(id, 'pay').expect(200)).body;
    expect(paid).toMatchObject({
      status: 'PAID',
      paidAt: new Date(t.clock.now()).toISOString(),
      paymentDeadline: null,
    });
    expect(await api.tasks(`order:${id}:close-unpaid`)).toMatchObject([{ state: 'cancelled' }]);

    await api.advance(31 * MINUTE);
    expect(await api.get(id)).toMatchObject({ status: 'PAID', closeReason: null });

    const finished = (await api.action(id, 'finish').expect(200)).body;
    const finishedAt = t.clock.now();
    expect(finished).toMatchObject({
      status: 'FINISHED',
      finishedAt: new Date(finishedAt).toISOString(),
      autoReviewAt: new Date(finishedAt + 48 * HOUR).toISOString(),
      reviewStatus: 'NONE',
    });

    await api.advance(47 * HOUR + 59 * MINUTE);
    expect(await api.get(id)).toMatchObject({ reviewStatus: 'NONE', stars: null });

    await api.advance(MINUTE);
    expect(await api.get(id)).toMatchObject({
      status: 'FINISHED',
      reviewStatus: 'AUTO_REVIEWED',
      stars: 5,
      comment: null,
      reviewedAt: new Date(finishedAt + 48 * HOUR).toISOString(),
      autoReviewAt: null,
    });
    await api.advance(48 * HOUR);
    const history = await api.history(id);
    expect(history.map((e) => e.type)).toEqual(['CREATED', 'PAID', 'FINISHED', 'AUTO_REVIEWED']);
    expect(history.filter((e) => e.type === 'AUTO_REVIEWED')).toEqual([
      {
        type: 'AUTO_REVIEWED',
        by: 'system',
        at: new Date(finishedAt + 48 * HOUR).toISOString(),
        data: { stars: 5 },
      },
    ]);
    expect(await api.tasks(`order:${id}:auto-review`)).toMatchObject([{ state: 'executed' }]);
    // Four days walked in due order: about 1,150 stops of the app's 10-minute schedule, some
    // 25 s alone on a loaded machine, past Jest's 60 s beside other files.
  }, 240_000);

  it("keeps the user's review and cancels the auto-review task", async () => {
    const { id } = await api.createOrder();
    await api.action(id, 'pay').expect(200);
    await api.action(id, 'finish').expect(200);
    await t.delay.assertScheduled({ type: 'order.auto-review', payload: { orderId: id } });

    const reviewed = (
      await api.action(id, 'review', { stars: 3, comment: 'late, but fine' }).expect(200)
    ).body;
    expect(reviewed).toMatchObject({
      reviewStatus: 'REVIEWED',
      stars: 3,
      comment: 'late, but fine',
      autoReviewAt: null,
    });

    await api.advance(49 * HOUR);
    expect(await api.get(id)).toMatchObject({
      reviewStatus: 'REVIEWED',
      stars: 3,
      comment: 'late, but fine',
    });
    expect(await api.tasks(`order:${id}:auto-review`)).toMatchObject([{ state: 'cancelled' }]);
    expect((await api.history(id)).map((e) => [e.type, e.by])).toEqual([
      ['CREATED', 'user'],
      ['PAID', 'user'],
      ['FINISHED', 'user'],
      ['REVIEWED', 'user'],
    ]);
  });

  it('takes a review without a comment', async () => {
    const { id } = await api.createOrder();
    await api.action(id, 'pay').expect(200);
    await api.action(id, 'finish', {}).expect(200);
    const reviewed = (await api.action(id, 'review', { stars: 1 }).expect(200)).body;
    expect(reviewed).toMatchObject({ reviewStatus: 'REVIEWED', stars: 1, comment: null });
  });
});

describe('user cancel', () => {
  it('closes the order as USER_CANCELLED and cancels the close-unpaid task', async () => {
    const { id } = await api.createOrder();
    const cancelled = (await api.action(id, 'cancel').expect(200)).body;
    expect(cancelled).toMatchObject({
      status: 'CLOSED',
      closeReason: 'USER_CANCELLED',
      closedAt: new Date(t.clock.now()).toISOString(),
      paymentDeadline: null,
    });
    expect(await api.tasks(`order:${id}:close-unpaid`)).toMatchObject([{ state: 'cancelled' }]);
    await api.advance(31 * MINUTE);
    expect(await api.get(id)).toMatchObject({ status: 'CLOSED', closeReason: 'USER_CANCELLED' });
    expect((await api.history(id)).map((e) => [e.type, e.by, e.data])).toEqual([
      ['CREATED', 'user', { userId: 'user-1', amountCents: 1999 }],
      ['CLOSED', 'user', { reason: 'USER_CANCELLED' }],
    ]);
  });
});

describe('transitions the state does not allow', () => {
  /** Runs the action, expects a 409 naming the state, and checks that nothing changed. */
  async function expectConflict(
    id: string,
    action: string,
    state: string,
    body?: Record<string, unknown>,
  ) {
    const before = await api.get(id);
    const historyBefore = await api.history(id);
    const counts = await api.rowCounts();
    const res = await api.action(id, action, body).expect(409);
    expect(res.body).toMatchObject({ statusCode: 409, error: 'Conflict' });
    expect(res.body.message).toContain(id);
    expect(res.body.message).toContain(state);
    expect(await api.get(id)).toEqual(before);
    expect(await api.history(id)).toHaveLength(historyBefore.length);
    expect(await api.rowCounts()).toEqual(counts);
  }

  it('cancel twice, pay after close', async () => {
    const { id } = await api.createOrder();
    await api.action(id, 'cancel').expect(200);
    await expectConflict(id, 'cancel', 'CLOSED');
    await expectConflict(id, 'pay', 'CLOSED');
    await expectConflict(id, 'finish', 'CLOSED');
  });

  it('pay after the payment timeout closed the order', async () => {
    const { id } = await api.createOrder();
    await api.advance(30 * MINUTE);
    await expectConflict(id, 'pay', 'CLOSED');
  });

  it('finish before pay, review before finish', async () => {
    const { id } = await api.createOrder();
    await expectConflict(id, 'finish', 'PENDING_PAYMENT');
    await expectConflict(id, 'review', 'PENDING_PAYMENT', { stars: 4 });
    await api.action(id, 'pay').expect(200);
    await expectConflict(id, 'pay', 'PAID');
    await expectConflict(id, 'cancel', 'PAID');
    await expectConflict(id, 'review', 'PAID', { stars: 4 });
    // The failed cancel left the close-unpaid task cancelled, as pay made it.
    expect(await api.tasks(`order:${id}:close-unpaid`)).toMatchObject([{ state: 'cancelled' }]);
  });

  it('review twice, and after the auto-review', async () => {
    const { id } = await api.createOrder();
    await api.action(id, 'pay').expect(200);
    await api.action(id, 'finish').expect(200);
    await expectConflict(id, 'finish', 'FINISHED');
    await api.action(id, 'review', { stars: 4 }).expect(200);
    await expectConflict(id, 'review', 'REVIEWED', { stars: 2 });

    const other = await api.createOrder();
    await api.action(other.id, 'pay').expect(200);
    await api.action(other.id, 'finish').expect(200);
    await api.advance(48 * HOUR);
    expect(await api.get(other.id)).toMatchObject({ reviewStatus: 'AUTO_REVIEWED' });
    await expectConflict(other.id, 'review', 'AUTO_REVIEWED', { stars: 1 });
  });
});

describe('a malformed order task', () => {
  it('is dead-lettered at its first attempt, saying why, and changes no order', async () => {
    const before = await api.rowCounts();
    const task = await t.delay.delay.schedule({
      type: 'order.close-unpaid',
      payload: { orderId: 'not-a-uuid' },
      delay: '1m',
    });
    const report = await api.advance(MINUTE);
    expect(report.byType['order.close-unpaid']).toMatchObject({ deadLettered: 1, failed: 0 });
    expect(await t.delay.delay.get({ id: task.id })).toMatchObject({
      state: 'dead',
      attempts: 1,
      lastError: expect.stringContaining('payload.orderId must be a UUID'),
    });
    const after = await api.rowCounts();
    expect({ ...after, delayed_task: before.delayed_task }).toEqual(before);
  });

  it('is discarded when its handler is performed directly', async () => {
    await expect(t.delay.perform('order.auto-review', { orderId: 42 })).resolves.toEqual({
      outcome: 'discarded',
      reason: expect.stringContaining('payload.orderId must be a UUID'),
    });
  });
});

describe('links', () => {
  it('links each order to its history, and to no timeline while the admin API is off', async () => {
    const created = await api.createOrder();
    const listed = (await api.asOwnerOf(created.id).get('/orders?limit=1').expect(200)).body
      .items[0];
    for (const order of [created, await api.get(created.id), listed]) {
      expect(order.links).toEqual({
        history: `/orders/${created.id}/history`,
        timeline: null,
        timelinePage: null,
      });
    }
    await api.asOwnerOf(created.id).get(created.links.history).expect(200);
  });
});
