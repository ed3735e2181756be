import type { TestApp } from '../support/app-factory.js';
import { createRequestHash } from '../../src/orders/create-request-hash.js';
import { OrdersApi, useOrdersApp } from './orders-api.js';

const app = useOrdersApp();
let t: TestApp;
let api: OrdersApi;
beforeAll(() => {
  ({ t, api } = app);
});

/** POST /orders with the key, as the body's user (the user creating their own order). */
const create = (key: string, body: Record<string, unknown>) =>
  api.as(String(body.userId)).post('/orders').set('Idempotency-Key', key).send(body);

describe('POST /orders with an Idempotency-Key', () => {
  it('returns the same order for the same key and body, without a second order or task', async () => {
    const body = { userId: 'idem-user', amountCents: 4200 };
    const first = await create('checkout-1', body).expect(201);
    const counts = await api.rowCounts();

    t.clock.advance(5_000);
    const again = await create('checkout-1', { amountCents: 4200, userId: 'idem-user' }).expect(
      201,
    );
    expect(again.body).toEqual(first.body);
    expect(await api.rowCounts()).toEqual(counts);
    expect(await api.tasks(`order:${first.body.id}:close-unpaid`)).toHaveLength(1);
    const history = await api.as('idem-user').get(`/orders/${first.body.id}/history`);
    expect(history.body).toHaveLength(1);
  });

  it('returns the order as it is now when it changed since', async () => {
    const body = { userId: 'idem-user', amountCents: 1 };
    const first = await create('checkout-2', body).expect(201);
    await api.as('idem-user').post(`/orders/${first.body.id}/pay`).expect(200);
    const again = await create('checkout-2', body).expect(201);
    expect(again.body).toMatchObject({ id: first.body.id, status: 'PAID' });
  });

  it('rejects the same key with a different body with a 409, writing nothing', async () => {
    const first = await create('checkout-3', { userId: 'idem-user', amountCents: 100 }).expect(201);
    const counts = await api.rowCounts();
    const res = await create('checkout-3', { userId: 'idem-user', amountCents: 101 }).expect(409);
    expect(res.body).toMatchObject({ statusCode: 409, error: 'Conflict' });
    expect(res.body.message).toContain('"checkout-3"');
    // Someone else's userId is refused before the key is looked at.
    await api
      .as('idem-user')
      .post('/orders')
      .set('Idempotency-Key', 'checkout-3')
      .send({ userId: 'someone-else', amountCents: 100 })
      .expect(403);
    expect(await api.rowCounts()).toEqual(counts);
    const now = await api.as('idem-user').get(`/orders/${first.body.id}`).expect(200);
    expect(now.body).toEqual(first.body);
  });

  it('creates distinct orders for distinct keys and for requests without a key', async () => {
    const body = { userId: 'idem-user', amountCents: 7 };
    const a = await create('checkout-4a', body).expect(201);
    const b = await create('checkout-4b', body).expect(201);
    const c = await api.as('idem-user').post('/orders', body).expect(201);
    const d = await api.as('idem-user').post('/orders', body).expect(201);
    expect(new Set([a.body.id, b.body.id, c.body.id, d.body.id]).size).toBe(4);
  });

  it("replays the user's order when the body leaves out userId, the token's user", async () => {
    const first = await create('checkout-6', { userId: 'idem-user', amountCents: 60 }).expect(201);
    const again = await api
      .as('idem-user')
      .post('/orders')
      .set('Idempotency-Key', 'checkout-6')
      .send({ amountCents: 60 })
      .expect(201);
    expect(again.body).toEqual(first.body);
  });

  it('a rejected request does not use up the key', async () => {
    await create('checkout-5', { userId: 'idem-user', amountCents: 0 }).expect(400);
    const res = await create('checkout-5', { userId: 'idem-user', amountCents: 5 }).expect(201);
    expect(res.body.amountCents).toBe(5);
  });

  it('creates one order when the same request arrives several times at once', async () => {
    const counts = await api.rowCounts();
    const body = { userId: 'idem-race', amountCents: 999 };
    const responses = await Promise.all(
      Array.from({ length: 8 }, () => create('checkout-race', body)),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(8).fill(201));
    expect(new Set(responses.map((r) => r.body.id)).size).toBe(1);
    const after = await api.rowCounts();
    expect(after.orders - counts.orders).toBe(1);
    expect(after.delayed_task - counts.delayed_task).toBe(1);
    expect(after.user_idempotency_key - counts.user_idempotency_key).toBe(1);
  });

  it('lets exactly one of several different bodies racing on one key win', async () => {
    const responses = await Promise.all(
      [1, 2, 3, 4].map((amountCents) =>
        create('checkout-race-2', { userId: 'idem-race', amountCents }),
      ),
    );
    expect(responses.map((r) => r.status).sort()).toEqual([201, 409, 409, 409]);
    const winner = responses.find((r) => r.status === 201)!;
    expect(
      await api.query(`SELECT order_id FROM user_idempotency_key WHERE key = 'checkout-race-2'`),
    ).toEqual([{ order_id: winner.body.id }]);
  });
});

// During a rolling deploy the release before per-user keys runs beside this
// one and knows only order_idempotency_key (one key for everyone): a client's
// retry may reach either release.
describe('Idempotency-Keys beside the release before per-user keys', () => {
  it('writes each key to the shared table too, where that release looks', async () => {
    const first = await create('rolling-1', { userId: 'roll-user', amountCents: 5 }).expect(201);
    expect(
      await api.query(`SELECT order_id FROM order_idempotency_key WHERE key = 'rolling-1'`),
    ).toEqual([{ order_id: first.body.id }]);
  });

  it("answers a retry with the order the release before made for this user's key", async () => {
    const mine = await api.as('roll-user').post('/orders').send({ amountCents: 6 }).expect(201);
    // As that release wrote it: the key alone, for the order it created.
    await api.query(
      `INSERT INTO order_idempotency_key (key, request_hash, order_id, created_at) VALUES ('rolling-2', $1, $2, $3)`,
      [
        createRequestHash({ userId: 'roll-user', amountCents: 6 }),
        mine.body.id,
        new Date(t.clock.now()),
      ],
    );
    const again = await create('rolling-2', { userId: 'roll-user', amountCents: 6 }).expect(201);
    expect(again.body.id).toBe(mine.body.id);
    // Another user's key there is not theirs: a new order of their own.
    const other = await create('rolling-2', { userId: 'roll-other', amountCents: 6 }).expect(201);
    expect(other.body.id).not.toBe(mine.body.id);
  });
});
