import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { createTestApp, type TestApp } from '../support/app-factory.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { OrdersApi, type OrderJson } from './orders-api.js';

let db: TestDatabase;
let t: TestApp;
let api: OrdersApi;
/** A PENDING_PAYMENT order and a FINISHED, unreviewed one: a wrongly accepted request would change them. */
let pending: OrderJson;
let finished: OrderJson;
const unknownId = randomUUID();

beforeAll(async () => {
  db = await createTestDatabase();
  t = await createTestApp(db);
  api = new OrdersApi(t);
  pending = await api.createOrder({ userId: 'validation', amountCents: 100 });
  finished = await api.createOrder({ userId: 'validation', amountCents: 200 });
  await api.action(finished.id, 'pay').expect(200);
  finished = (await api.action(finished.id, 'finish').expect(200)).body;
});

afterAll(async () => {
  await t?.app.close();
  await db?.drop();
});

interface BadRequest {
  method: 'get' | 'post';
  /** `:pending`, `:finished` and `:unknown` stand for those orders' ids. */
  path: string;
  /** Sent as JSON, or as it is when a string. */
  body?: unknown;
  headers?: Record<string, string>;
  status: 400 | 404;
  /** Text the error message must contain: the field, the id. */
  names: string;
}

const valid = { userId: 'u1', amountCents: 100 };
// One line per case, as a table.
// prettier-ignore
const cases: Array<[string, BadRequest]> = [
  ['amountCents as a string', { method: 'post', path: '/orders', body: { ...valid, amountCents: '100' }, status: 400, names: 'amountCents' }],
  ['amountCents 0', { method: 'post', path: '/orders', body: { ...valid, amountCents: 0 }, status: 400, names: 'amountCents' }],
  ['amountCents negative', { method: 'post', path: '/orders', body: { ...valid, amountCents: -5 }, status: 400, names: 'amountCents' }],
  ['amountCents fractional', { method: 'post', path: '/orders', body: { ...valid, amountCents: 10.5 }, status: 400, names: 'amountCents' }],
  ['amountCents over 1e9', { method: 'post', path: '/orders', body: { ...valid, amountCents: 1_000_000_001 }, status: 400, names: 'amountCents' }],
  ['amountCents huge', { method: 'post', path: '/orders', body: '{"userId":"u1","amountCents":1e300}', status: 400, names: 'amountCents' }],
  ['amountCents null', { method: 'post', path: '/orders', body: { ...valid, amountCents: null }, status: 400, names: 'amountCents' }],
  ['amountCents missing', { method: 'post', path: '/orders', body: { userId: 'u1' }, status: 400, names: 'amountCents' }],
  ['userId a number', { method: 'post', path: '/orders', body: { ...valid, userId: 42 }, status: 400, names: 'userId' }],
  ['userId empty', { method: 'post', path: '/orders', body: { ...valid, userId: '' }, status: 400, names: 'userId' }],
  ['userId of 65 characters', { method: 'post', path: '/orders', body: { ...valid, userId: 'x'.repeat(65) }, status: 400, names: 'userId' }],
  ['userId with a NUL character', { method: 'post', path: '/orders', body: { ...valid, userId: 'a\u0000b' }, status: 400, names: 'userId' }],
  ['userId with an unpaired surrogate', { method: 'post', path: '/orders', body: '{"userId":"a\\ud800","amountCents":1}', status: 400, names: 'userId' }],
  ['a field not in the contract', { method: 'post', path: '/orders', body: { ...valid, status: 'PAID' }, status: 400, names: 'property status should not exist' }],
  ['malformed JSON', { method: 'post', path: '/orders', body: '{"userId": "u1", "amountCents": ', status: 400, names: 'JSON' }],
  ['a JSON array', { method: 'post', path: '/orders', body: [valid], status: 400, names: 'request body must be a JSON object' }],
  ['a __proto__ key', { method: 'post', path: '/orders', body: '{"userId":"u1","amountCents":1,"__proto__":{"x":1}}', status: 400, names: 'property __proto__ should not exist' }],
  ['a field nested 5,000 levels deep', { method: 'post', path: '/orders', body: `{"userId":"u1","amountCents":1,"note":${'['.repeat(5000)}${']'.repeat(5000)}}`, status: 400, names: 'must not nest deeper than 32 levels' }],
  ['an unknown field nested 5,000 levels deep', { method: 'post', path: '/orders', body: `{"userId":"u1","amountCents":1,"x":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`, status: 400, names: 'must not nest deeper than 32 levels' }],
  ['a __proto__ key 25 levels deep', { method: 'post', path: '/orders', body: `{"userId":"u1","amountCents":1,"x":${'{"a":'.repeat(25)}{"__proto__":{}}${'}'.repeat(25)}}`, status: 400, names: 'property __proto__ should not exist' }],
  ['a constructor key', { method: 'post', path: '/orders', body: '{"userId":"u1","amountCents":1,"constructor":{"x":1}}', status: 400, names: 'property constructor should not exist' }],
  ['a __proto__ key in a review', { method: 'post', path: '/orders/:finished/review', body: '{"stars":3,"__proto__":{"stars":5}}', status: 400, names: 'property __proto__ should not exist' }],
  ['an empty Idempotency-Key', { method: 'post', path: '/orders', body: valid, headers: { 'Idempotency-Key': '' }, status: 400, names: 'Idempotency-Key' }],
  ['an Idempotency-Key of 201 characters', { method: 'post', path: '/orders', body: valid, headers: { 'Idempotency-Key': 'k'.repeat(201) }, status: 400, names: 'Idempotency-Key' }],
  ['GET a non-uuid id', { method: 'get', path: '/orders/42', status: 400, names: '"42"' }],
  ['GET an unknown id', { method: 'get', path: '/orders/:unknown', status: 404, names: ':unknown' }],
  ['history of a non-uuid id', { method: 'get', path: '/orders/not-a-uuid/history', status: 400, names: 'id must be a UUID' }],
  ['history of an unknown id', { method: 'get', path: '/orders/:unknown/history', status: 404, names: ':unknown' }],
  ['pay a non-uuid id', { method: 'post', path: '/orders/1%27%20OR%201=1/pay', status: 400, names: 'id must be a UUID' }],
  ['pay an unknown id', { method: 'post', path: '/orders/:unknown/pay', status: 404, names: ':unknown' }],
  ['cancel an unknown id', { method: 'post', path: '/orders/:unknown/cancel', status: 404, names: ':unknown' }],
  ['finish an unknown id', { method: 'post', path: '/orders/:unknown/finish', status: 404, names: ':unknown' }],
  ['pay with a body field', { method: 'post', path: '/orders/:pending/pay', body: { amountCents: 1 }, status: 400, names: 'property amountCents should not exist' }],
  ['cancel with a JSON array body', { method: 'post', path: '/orders/:pending/cancel', body: [], status: 400, names: 'body' }],
  ['pay with malformed JSON', { method: 'post', path: '/orders/:pending/pay', body: '{', status: 400, names: 'JSON' }],
  ['a badly percent-encoded id', { method: 'post', path: '/orders/%E0%A4%A/pay', status: 400, names: 'Failed to decode param' }],
  ['review with stars 0', { method: 'post', path: '/orders/:finished/review', body: { stars: 0 }, status: 400, names: 'stars' }],
  ['review with stars 6', { method: 'post', path: '/orders/:finished/review', body: { stars: 6 }, status: 400, names: 'stars' }],
  ['review with stars as a string', { method: 'post', path: '/orders/:finished/review', body: { stars: '5' }, status: 400, names: 'stars' }],
  ['review with fractional stars', { method: 'post', path: '/orders/:finished/review', body: { stars: 4.5 }, status: 400, names: 'stars' }],
  ['review without stars', { method: 'post', path: '/orders/:finished/review', body: { comment: 'ok' }, status: 400, names: 'stars' }],
  ['review with a comment of 1001 characters', { method: 'post', path: '/orders/:finished/review', body: { stars: 5, comment: 'c'.repeat(1001) }, status: 400, names: 'comment' }],
  ['review with a numeric comment', { method: 'post', path: '/orders/:finished/review', body: { stars: 5, comment: 5 }, status: 400, names: 'comment' }],
  ['review with a null comment', { method: 'post', path: '/orders/:finished/review', body: { stars: 5, comment: null }, status: 400, names: 'comment' }],
  ['review with a field not in the contract', { method: 'post', path: '/orders/:finished/review', body: { stars: 5, reviewStatus: 'AUTO_REVIEWED' }, status: 400, names: 'property reviewStatus should not exist' }],
  ['review with malformed JSON', { method: 'post', path: '/orders/:finished/review', body: '{"stars": 5,}', status: 400, names: 'JSON' }],
  ['review an unknown id', { method: 'post', path: '/orders/:unknown/review', body: { stars: 5 }, status: 404, names: ':unknown' }],
  ['list with limit 0', { method: 'get', path: '/orders?limit=0', status: 400, names: 'limit' }],
  ['list with limit 101', { method: 'get', path: '/orders?limit=101', status: 400, names: 'limit' }],
  ['list with limit abc', { method: 'get', path: '/orders?limit=abc', status: 400, names: 'limit' }],
  ['list with limit 1.5', { method: 'get', path: '/orders?limit=1.5', status: 400, names: 'limit' }],
  ['list with limit twice', { method: 'get', path: '/orders?limit=1&limit=2', status: 400, names: 'limit' }],
  ['list with an unknown status', { method: 'get', path: '/orders?status=DONE', status: 400, names: 'status' }],
  ['list with an empty status', { method: 'get', path: '/orders?status=', status: 400, names: 'status' }],
  ['list with a lower-case status', { method: 'get', path: '/orders?status=paid', status: 400, names: 'status' }],
  ['list with a garbage cursor', { method: 'get', path: '/orders?cursor=not!base64', status: 400, names: 'cursor' }],
  ['list with a base64url cursor that is not ours', { method: 'get', path: `/orders?cursor=${Buffer.from('hello').toString('base64url')}`, status: 400, names: 'cursor' }],
  ['list with an unknown parameter', { method: 'get', path: '/orders?sort=asc', status: 400, names: 'property sort should not exist' }],
];

describe('requests out of contract', () => {
  it.each(cases)('%s → its 4xx, nothing written', async (_name, c) => {
    const ids: Record<string, string> = {
      ':pending': pending.id,
      ':finished': finished.id,
      ':unknown': unknownId,
    };
    const path = c.path.replace(/:pending|:finished|:unknown/, (m) => ids[m]);
    const names = c.names.replace(/:pending|:finished|:unknown/, (m) => ids[m]);
    const countsBefore = await api.rowCounts();

    // An admin's token: every order is in reach, so only the contract decides.
    const admin = api.as('validation-admin', { admin: true });
    let req = c.method === 'get' ? admin.get(path) : admin.post(path);
    for (const [name, value] of Object.entries(c.headers ?? {})) req = req.set(name, value);
    if (typeof c.body === 'string') req = req.set('Content-Type', 'application/json').send(c.body);
    else if (c.body !== undefined) req = req.send(c.body as object);
    const res = await req;

    expect(res.status).toBe(c.status);
    expect(res.body).toMatchObject({
      statusCode: c.status,
      error: c.status === 400 ? 'Bad Request' : 'Not Found',
    });
    expect(JSON.stringify(res.body.message)).toContain(JSON.stringify(names).slice(1, -1));
    expect(await api.rowCounts()).toEqual(countsBefore);
    expect(await api.get(pending.id)).toEqual(pending);
    expect(await api.get(finished.id)).toEqual(finished);
  });

  it('has at least 20 cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(20);
  });
});

describe('any request', () => {
  it('is never answered with a 5xx, whatever JSON it carries', async () => {
    // Its own finished order: a body that happens to be a valid review may review it.
    const target = await api.createOrder();
    await api.action(target.id, 'pay').expect(200);
    await api.action(target.id, 'finish').expect(200);
    // Any UTF-16 code unit in strings: NUL characters and unpaired surrogates too.
    const json = fc.jsonValue({ stringUnit: 'binary', maxDepth: 3 });
    const body = fc.oneof(
      json,
      fc.record(
        { userId: json, amountCents: json, stars: json, comment: json },
        { requiredKeys: [] },
      ),
    );
    const paths = [`/orders`, `/orders/${target.id}/review`, `/orders/${unknownId}/pay`];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...paths), body, async (path, value) => {
        const res = await api
          .as('validation-admin', { admin: true })
          .post(path)
          .set('Content-Type', 'application/json')
          .send(JSON.stringify(value));
        expect(res.status).toBeLessThan(500);
      }),
      { numRuns: 80 },
    );
  });

  it('answers a body over 100 kB with a 413', async () => {
    const res = await api
      .as('u')
      .post('/orders')
      .send({ userId: 'u', amountCents: 1, pad: 'x'.repeat(200_000) });
    expect(res.status).toBe(413);
  });
});

describe('requests in contract at the limits', () => {
  it('takes the largest amount, a 64-character userId and a 200-character Idempotency-Key', async () => {
    const res = await api
      .as('u'.repeat(64))
      .post('/orders')
      .set('Idempotency-Key', 'k'.repeat(200))
      .send({ userId: 'u'.repeat(64), amountCents: 1_000_000_000 })
      .expect(201);
    expect(res.body).toMatchObject({ userId: 'u'.repeat(64), amountCents: 1_000_000_000 });
  });

  it('takes a review of 1000 characters with emoji, and pay with an empty JSON object', async () => {
    const order = await api.createOrder();
    await api.action(order.id, 'pay', {}).expect(200);
    await api.action(order.id, 'finish').expect(200);
    const comment = '👍'.repeat(500);
    const res = await api.action(order.id, 'review', { stars: 5, comment }).expect(200);
    expect(res.body).toMatchObject({ stars: 5, comment });
  });

  it('answers an upper-case id with the order', async () => {
    const upper = api.asOwnerOf(pending.id).get(`/orders/${pending.id.toUpperCase()}`);
    expect((await upper.expect(200)).body).toEqual(pending);
  });
});
