import { OrdersApi, useOrdersApp } from './orders-api.js';

/**
 * A refund or a review racing a finish: the finish commits an auto-review
 * task while the other waits for the order's lock. Whichever wins, no task
 * is left pending on a refunded or reviewed order ("a refund cancels every
 * pending task of the order").
 */
const app = useOrdersApp();
let api: OrdersApi;
beforeAll(() => {
  ({ api } = app);
});

const ROUNDS = 10;

async function pendingTasks(orderId: string): Promise<string[]> {
  const rows = await api.query<{ type: string }>(
    `SELECT type FROM delayed_task
     WHERE entity = $1 AND executed_at IS NULL AND cancelled_at IS NULL AND dead_at IS NULL`,
    [`order:${orderId}`],
  );
  return rows.map((row) => row.type);
}

describe('races with a finish', () => {
  it('a refund racing a finish leaves no pending task on a refunded order', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const order = await api.createOrder();
      await api.action(order.id, 'pay').expect(200);
      const [finish, refund] = await Promise.all([
        api.action(order.id, 'finish'),
        api.action(order.id, 'refund'),
      ]);
      expect([200, 409]).toContain(finish.status);
      expect(refund.status).toBe(200);
      expect((await api.get(order.id)).status).toBe('REFUNDED');
      expect(await pendingTasks(order.id)).toEqual([]);
    }
  });

  it('a review racing a finish leaves no pending auto-review on a reviewed order', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const order = await api.createOrder();
      await api.action(order.id, 'pay').expect(200);
      const [finish, review] = await Promise.all([
        api.action(order.id, 'finish'),
        api.action(order.id, 'review', { stars: 4 }),
      ]);
      expect(finish.status).toBe(200);
      expect([200, 409]).toContain(review.status);
      const current = await api.get(order.id);
      if (review.status === 200) {
        expect(current.reviewStatus).toBe('REVIEWED');
        expect(await pendingTasks(order.id)).toEqual([]);
      } else {
        // The review came first and was refused: the auto-review stays, to run.
        expect(await pendingTasks(order.id)).toEqual(['order.auto-review']);
      }
    }
  });
});
