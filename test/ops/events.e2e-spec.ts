import { EventEmitter2 } from '@nestjs/event-emitter';
import { MINUTE, HOUR, useOrdersApp } from '../orders/orders-api.js';

describe('events', () => {
  // The Idempotency-Key purge's occurrences would be events too: off, so only the orders' count.
  const ctx = useOrdersApp({ ORDER_IDEMPOTENCY_PURGE_EVERY: 'off' });
  /** What was emitted, in order, as [name, payload]. */
  const seen: Array<[string, any]> = [];
  let emitter: EventEmitter2;
  const record = function (this: { event: string }, payload: unknown) {
    seen.push([this.event, payload]);
  };

  beforeAll(() => {
    emitter = ctx.t.app.get(EventEmitter2);
    for (const name of [
      'order.created',
      'order.paid',
      'order.closed',
      'order.finished',
      'order.reviewed',
      'order.auto-reviewed',
      'delay.task.executed',
    ])
      emitter.on(name, record);
  });
  beforeEach(() => {
    seen.length = 0;
  });

  const names = () => seen.map(([name]) => name);

  it('emits the lifecycle of an order after each change committed, the system steps included', async () => {
    const { api } = ctx;
    const order = await api.createOrder();
    expect(seen).toEqual([
      [
        'order.created',
        expect.objectContaining({ orderId: order.id, type: 'CREATED', actor: 'user' }),
      ],
    ]);
    await api.action(order.id, 'pay').expect(200);
    await api.action(order.id, 'finish').expect(200);
    await api.advance(48 * HOUR);
    expect(names()).toEqual([
      'order.created',
      'order.paid',
      'order.finished',
      'order.auto-reviewed',
      'delay.task.executed',
    ]);
    expect(seen[3][1]).toMatchObject({ orderId: order.id, actor: 'system', data: { stars: 5 } });
    expect(seen[4][1]).toMatchObject({
      type: 'order.auto-review',
      key: `order:${order.id}:auto-review`,
    });
    expect(seen[4][1].latenessMs).toBeGreaterThanOrEqual(0);
  });

  it('emits order.closed with its reason, from the user or from the payment timeout', async () => {
    const { api } = ctx;
    const cancelled = await api.createOrder();
    const unpaid = await api.createOrder();
    await api.action(cancelled.id, 'cancel').expect(200);
    await api.advance(30 * MINUTE + 1000);
    const closed = seen.filter(([name]) => name === 'order.closed').map(([, e]) => e);
    expect(closed).toEqual([
      expect.objectContaining({
        orderId: cancelled.id,
        actor: 'user',
        data: { reason: 'USER_CANCELLED' },
      }),
      expect.objectContaining({
        orderId: unpaid.id,
        actor: 'system',
        data: { reason: 'PAYMENT_TIMEOUT' },
      }),
    ]);
  });

  it('emits nothing for a change that was refused and rolled back', async () => {
    const { api } = ctx;
    const order = await api.createOrder();
    await api.action(order.id, 'cancel').expect(200);
    seen.length = 0;
    await api.action(order.id, 'pay').expect(409);
    await api.action(order.id, 'review', { stars: 3 }).expect(409);
    expect(seen).toEqual([]);
  });

  it('keeps a throwing listener away from the request and the task: logged, nothing else', async () => {
    const { api } = ctx;
    const boom = () => {
      throw new Error('listener broke');
    };
    emitter.on('order.created', boom);
    emitter.on('order.closed', boom);
    emitter.on('delay.task.executed', boom);
    try {
      const order = await api.createOrder();
      expect(order.status).toBe('PENDING_PAYMENT');
      const report = await api.advance(31 * MINUTE);
      expect(report.byType['order.close-unpaid']).toMatchObject({ executed: 1 });
      expect((await api.get(order.id)).status).toBe('CLOSED');
      expect(await api.tasks(`order:${order.id}:close-unpaid`)).toEqual([
        expect.objectContaining({ state: 'executed' }),
      ]);
    } finally {
      emitter.off('order.created', boom);
      emitter.off('order.closed', boom);
      emitter.off('delay.task.executed', boom);
    }
  });
});
