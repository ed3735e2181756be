import { randomUUID } from 'node:crypto';
import type request from 'supertest';
import { bearer, signHs256, TEST_AUTH_SECRET, unsignedToken, userToken } from '../support/auth.js';
import {
  startIdentityProvider,
  strangerKey,
  signEs256,
  type TestIdentityProvider,
} from '../support/jwks-server.js';
import { useOrdersApp, type OrderJson, type OrdersApi } from './orders-api.js';

// Someone with an account (mallory) or without one goes after another user's
// orders (victor's). Every request of this file is counted by the app's own
// /metrics: none may have been answered with a 5xx.

const VICTIM = 'victor';
const ATTACKER = 'mallory';

/** Responses by status, from the app's http_requests_total: every request it answered. */
async function responsesByStatus(api: OrdersApi): Promise<Map<string, number>> {
  const text = (await api.http().get('/metrics').expect(200)).text;
  const counts = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^http_requests_total\{(.*)\} (\d+)$/.exec(line);
    const status = match && /status="(\d+)"/.exec(match[1])?.[1];
    if (status) counts.set(status, (counts.get(status) ?? 0) + Number(match[2]));
  }
  return counts;
}

/** Registers the suite's last check: requests were made, and not one got a 5xx. */
function expectNoServerErrors(ctx: { api: OrdersApi }, atLeast: number) {
  afterAll(async () => {
    const counts = await responsesByStatus(ctx.api);
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThanOrEqual(atLeast);
    expect([...counts.keys()].filter((status) => status.startsWith('5'))).toEqual([]);
  });
}

/** Each route of the orders API on one order, sent with `authorization` (null: none). */
const ORDER_ROUTES: Array<[string, 'get' | 'post', string, object | undefined]> = [
  ['read it', 'get', '', undefined],
  ['read its history', 'get', '/history', undefined],
  ['pay it', 'post', '/pay', undefined],
  ['cancel it', 'post', '/cancel', undefined],
  ['finish it', 'post', '/finish', undefined],
  ['refund it', 'post', '/refund', {}],
  ['review it', 'post', '/review', { stars: 1, comment: 'mallory was here' }],
];

function send(
  api: OrdersApi,
  method: 'get' | 'post',
  path: string,
  authorization: string | null,
  body?: object,
): request.Test {
  let req = method === 'get' ? api.http().get(path) : api.http().post(path);
  if (authorization !== null) req = req.set('Authorization', authorization);
  return body === undefined ? req : req.send(body);
}

describe('an attacker with a token of their own (AUTH_JWT_SECRET)', () => {
  const ctx = useOrdersApp();
  expectNoServerErrors(ctx, 60);
  /** One of victor's orders in each state a route acts on. */
  const orders: Record<'pending' | 'paid' | 'finished', OrderJson> = {} as never;

  beforeAll(async () => {
    const { api } = ctx;
    orders.pending = await api.createOrder({ userId: VICTIM, amountCents: 100 });
    const paid = await api.createOrder({ userId: VICTIM, amountCents: 200 });
    orders.paid = (await api.action(paid.id, 'pay').expect(200)).body;
    const finished = await api.createOrder({ userId: VICTIM, amountCents: 300 });
    await api.action(finished.id, 'pay').expect(200);
    orders.finished = (await api.action(finished.id, 'finish').expect(200)).body;
    await api.createOrder({ userId: ATTACKER, amountCents: 1 });
  });

  describe.each(['pending', 'paid', 'finished'] as const)("victor's %s order", (state) => {
    it.each(ORDER_ROUTES)(
      'is a 404 to mallory who tries to %s, exactly as an unknown id is, and nothing changes',
      async (_action, method, suffix, body) => {
        const { api } = ctx;
        const order = orders[state];
        const before = await api.rowCounts();
        const tasks = await api.query(
          `SELECT id, executed_at, cancelled_at FROM delayed_task WHERE entity = $1 ORDER BY id`,
          [`order:${order.id}`],
        );
        const theirs = await send(
          api,
          method,
          `/orders/${order.id}${suffix}`,
          bearer(ATTACKER),
          body,
        );
        const unknownId = randomUUID();
        const unknown = await send(
          api,
          method,
          `/orders/${unknownId}${suffix}`,
          bearer(ATTACKER),
          body,
        );
        expect(theirs.status).toBe(404);
        // Nothing tells a stranger's order from none at all.
        expect(unknown.status).toBe(404);
        expect(theirs.body).toEqual({
          ...unknown.body,
          message: unknown.body.message.replace(unknownId, order.id),
        });
        expect(await api.rowCounts()).toEqual(before);
        expect(await api.get(order.id)).toEqual(order);
        expect(
          await api.query(
            `SELECT id, executed_at, cancelled_at FROM delayed_task WHERE entity = $1 ORDER BY id`,
            [`order:${order.id}`],
          ),
        ).toEqual(tasks);
      },
    );
  });

  it("keeps victor's orders out of mallory's list, and refuses her a filter on his", async () => {
    const { api } = ctx;
    const mine = (await api.as(ATTACKER).get('/orders?limit=100').expect(200)).body;
    expect(mine.items.map((o: OrderJson) => o.userId)).toEqual([ATTACKER]);
    const filtered = await api.as(ATTACKER).get(`/orders?userId=${VICTIM}`).expect(403);
    expect(filtered.body.message).toContain(`"${VICTIM}"`);
    // A role that is not exactly `admin` is no role.
    for (const roles of [['Admin'], ['admins'], 'administrator', []]) {
      const res = await api
        .as(ATTACKER, { claims: { roles } })
        .get('/orders?limit=100')
        .expect(200);
      expect(res.body.items.map((o: OrderJson) => o.userId)).toEqual([ATTACKER]);
    }
  });

  it("refuses an order for victor in mallory's name with a 403, and takes her own id", async () => {
    const { api } = ctx;
    const before = await api.rowCounts();
    const res = await api
      .as(ATTACKER)
      .post('/orders', { userId: VICTIM, amountCents: 5 })
      .expect(403);
    expect(res.body).toMatchObject({ statusCode: 403, error: 'Forbidden' });
    expect(res.body.message).toContain(`userId "${VICTIM}" is not the token's user`);
    expect(await api.rowCounts()).toEqual(before);
    const own = await api.as(ATTACKER).post('/orders', { userId: ATTACKER, amountCents: 5 });
    expect(own.status).toBe(201);
    expect(own.body.userId).toBe(ATTACKER);
    const implicit = await api.as(ATTACKER).post('/orders', { amountCents: 6 }).expect(201);
    expect(implicit.body.userId).toBe(ATTACKER);
  });

  it("gives mallory her own new order for victor's Idempotency-Key, never his", async () => {
    const { api } = ctx;
    const key = 'checkout-victor-1';
    const body = { amountCents: 4200 };
    const his = await api.as(VICTIM).post('/orders', body).set('Idempotency-Key', key).expect(201);
    const hers = await api.as(ATTACKER).post('/orders', body).set('Idempotency-Key', key);
    expect(hers.status).toBe(201);
    expect(hers.body.id).not.toBe(his.body.id);
    expect(hers.body.userId).toBe(ATTACKER);
    // Another body under the same key is not a 409 either: her key is hers.
    await api
      .as(ATTACKER)
      .post('/orders', { amountCents: 1 })
      .set('Idempotency-Key', 'checkout-victor-2')
      .expect(201);
    await api
      .as(VICTIM)
      .post('/orders', { amountCents: 2 })
      .set('Idempotency-Key', 'checkout-victor-2')
      .expect(201);
    // His key still gives him his order, and her replay hers.
    const again = await api
      .as(VICTIM)
      .post('/orders', body)
      .set('Idempotency-Key', key)
      .expect(201);
    expect(again.body.id).toBe(his.body.id);
    const hersAgain = await api.as(ATTACKER).post('/orders', body).set('Idempotency-Key', key);
    expect(hersAgain.body.id).toBe(hers.body.id);
    expect(
      await api.query(
        `SELECT user_id, order_id FROM user_idempotency_key WHERE key = $1 ORDER BY user_id`,
        [key],
      ),
    ).toEqual([
      { user_id: ATTACKER, order_id: hers.body.id },
      { user_id: VICTIM, order_id: his.body.id },
    ]);
  });

  it('answers a deeply nested body with a 400 naming the depth', async () => {
    const { api } = ctx;
    const deep = `{"amountCents":1,"x":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`;
    const res = await api
      .as(ATTACKER)
      .post('/orders')
      .set('Content-Type', 'application/json')
      .send(deep)
      .expect(400);
    expect(JSON.stringify(res.body.message)).toContain('must not nest deeper than 32 levels');
  });

  it('lets an admin read and act on any order, and create one for any user', async () => {
    const { api } = ctx;
    const admin = api.as('ops', { admin: true });
    const order = await api.createOrder({ userId: VICTIM, amountCents: 700 });
    expect((await admin.get(`/orders/${order.id}`).expect(200)).body.id).toBe(order.id);
    expect((await admin.post(`/orders/${order.id}/pay`).expect(200)).body.status).toBe('PAID');
    const forVictor = await admin.post('/orders', { userId: VICTIM, amountCents: 8 }).expect(201);
    expect(forVictor.body.userId).toBe(VICTIM);
    // Roles as one space-separated string, as OAuth's scope, count too.
    const spaced = api.as('ops', { claims: { roles: 'reader admin' } });
    await spaced.get(`/orders/${order.id}`).expect(200);
  });

  describe('without a valid token', () => {
    const now = () => Math.floor(Date.now() / 1000);
    // [case, Authorization header (null: none), what the message says]
    const cases: Array<[string, () => string | null, string | RegExp]> = [
      ['no Authorization header', () => null, 'Authorization: Bearer <token> header required'],
      ['a Basic header', () => 'Basic bWFsbG9yeTpodW50ZXIy', 'must be "Bearer <token>"'],
      ['Bearer and nothing', () => 'Bearer', 'must be "Bearer <token>"'],
      [
        'two tokens',
        () => `Bearer ${userToken(ATTACKER)} ${userToken(ATTACKER)}`,
        'must be "Bearer <token>"',
      ],
      ['not a JWT', () => 'Bearer hunter2', 'not a well-formed signed JWT'],
      ['a token of 10,000 characters', () => `Bearer ${'a'.repeat(10_000)}`, 'at most 8192'],
      [
        'a bad signature (another secret)',
        () => bearer(VICTIM, { secret: 'another-secret-0123456789abcdefghijklmnop' }),
        'signature does not verify',
      ],
      [
        'a signature moved onto another payload',
        () => {
          const [, , signature] = userToken(ATTACKER).split('.');
          const [header, payload] = userToken(VICTIM, { admin: true }).split('.');
          return `Bearer ${header}.${payload}.${signature}`;
        },
        'signature does not verify',
      ],
      [
        'alg none',
        () => `Bearer ${unsignedToken({ sub: VICTIM, exp: now() + 3600 })}`,
        'algorithm is not accepted; only HS256',
      ],
      [
        'alg HS512 with the right secret',
        () => {
          const token = signHs256(
            { alg: 'HS512' },
            { sub: VICTIM, exp: now() + 3600 },
            TEST_AUTH_SECRET,
          );
          return `Bearer ${token}`;
        },
        'algorithm is not accepted; only HS256',
      ],
      ['an expired token', () => bearer(VICTIM, { expiresIn: -60 }), /^Token expired at \d{4}-/],
      ['a token without exp', () => bearer(VICTIM, { expiresIn: null }), 'no exp claim'],
      ['a token without sub', () => bearer('', { claims: { sub: undefined } }), 'no sub claim'],
      ['a numeric sub', () => bearer('x', { claims: { sub: 42 } }), 'sub claim'],
      [
        'a sub of 65 characters',
        () => bearer('s'.repeat(65)),
        'sub claim must be a string of 1 to 64',
      ],
      [
        'a token not valid before an hour from now',
        () => bearer(VICTIM, { claims: { nbf: now() + 3600 } }),
        'nbf',
      ],
      [
        'roles that are not strings',
        () => bearer(VICTIM, { claims: { roles: [{ admin: true }] } }),
        'roles claim',
      ],
    ];

    it.each(cases)(
      '%s: every route is a 401 with WWW-Authenticate: Bearer and what was wrong, nothing written',
      async (_name, header, says) => {
        const { api } = ctx;
        const before = await api.rowCounts();
        const order = orders.pending;
        const authorization = header();
        const requests: Array<[string, 'get' | 'post', object | undefined]> = [
          ['/orders', 'get', undefined],
          ['/orders', 'post', { userId: VICTIM, amountCents: 1 }],
          ...ORDER_ROUTES.map(
            ([, method, suffix, body]) =>
              [`/orders/${order.id}${suffix}`, method, body] as [
                string,
                'get' | 'post',
                object | undefined,
              ],
          ),
        ];
        for (const [path, method, body] of requests) {
          const res = await send(api, method, path, authorization, body);
          expect({ path, status: res.status }).toEqual({ path, status: 401 });
          expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="orders"/);
          if (authorization !== null)
            expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
          expect(res.body).toMatchObject({ statusCode: 401, error: 'Unauthorized' });
          expect(res.body.message).toMatch(says);
          // The secret is never in an answer.
          expect(JSON.stringify(res.body) + res.headers['www-authenticate']).not.toContain(
            TEST_AUTH_SECRET,
          );
        }
        expect(await api.rowCounts()).toEqual(before);
      },
    );

    it('takes a token within the 5 s clock tolerance, and not one past it', async () => {
      const { api } = ctx;
      await api
        .http()
        .get('/orders')
        .set('Authorization', bearer(ATTACKER, { expiresIn: -2 }))
        .expect(200);
      await api
        .http()
        .get('/orders')
        .set('Authorization', bearer(ATTACKER, { expiresIn: -30 }))
        .expect(401);
    });
  });
});

describe('an attacker against an identity provider’s tokens (AUTH_JWKS_URL)', () => {
  let idp: TestIdentityProvider;
  const env: Record<string, string> = {};
  beforeAll(async () => {
    idp = await startIdentityProvider();
    Object.assign(env, {
      AUTH_JWKS_URL: idp.jwksUrl,
      AUTH_ISSUER: idp.issuer,
      AUTH_AUDIENCE: idp.audience,
    });
  });
  const ctx = useOrdersApp(env);
  expectNoServerErrors(ctx, 12);
  afterAll(() => idp?.close());

  const get = (token: string) =>
    ctx.api.http().get('/orders').set('Authorization', `Bearer ${token}`);

  it("takes the provider's token, and keeps its users apart", async () => {
    const { api } = ctx;
    const created = await api
      .http()
      .post('/orders')
      .set('Authorization', `Bearer ${await idp.sign(VICTIM)}`)
      .send({ amountCents: 10 })
      .expect(201);
    expect(created.body.userId).toBe(VICTIM);
    await api
      .http()
      .get(`/orders/${created.body.id}`)
      .set('Authorization', `Bearer ${await idp.sign(ATTACKER)}`)
      .expect(404);
    const admin = await idp.sign('ops', { roles: ['admin'] });
    await get(admin).expect(200);
    expect(idp.fetches()).toBeGreaterThanOrEqual(1);
  });

  const now = () => Math.floor(Date.now() / 1000);
  const cases: Array<[string, () => Promise<string>, string | RegExp]> = [
    ['another issuer', () => idp.sign(VICTIM, { iss: 'https://evil.test/' }), 'iss claim'],
    ['no issuer', () => idp.sign(VICTIM, { iss: undefined }), 'no iss claim'],
    ['another audience', () => idp.sign(VICTIM, { aud: 'billing-api' }), 'aud claim'],
    ['no audience', () => idp.sign(VICTIM, { aud: undefined }), 'no aud claim'],
    ['an expired token', () => idp.sign(VICTIM, { exp: now() - 60 }), /^Token expired at/],
    ['a token without exp', () => idp.sign(VICTIM, { exp: undefined }), 'no exp claim'],
    [
      'a key the provider does not publish, with its kid',
      async () => signEs256(await strangerKey(), VICTIM, {}, {}),
      'signature does not verify',
    ],
    [
      'a key the provider does not publish, with a kid of its own',
      async () => signEs256(await strangerKey(), VICTIM, {}, { kid: 'k-evil' }),
      'No key of the identity provider matches',
    ],
    [
      'HS256 with the public key as the secret (alg confusion)',
      async () =>
        signHs256(
          { alg: 'HS256', kid: 'k1' },
          { sub: VICTIM, iss: idp.issuer, aud: idp.audience, exp: now() + 3600, roles: ['admin'] },
          JSON.stringify(idp.publicJwk),
        ),
      'algorithm is not accepted',
    ],
    [
      'HS256 with the test secret',
      async () => userToken(VICTIM, { issuer: idp.issuer, audience: idp.audience }),
      'algorithm is not accepted',
    ],
    [
      'alg none',
      async () =>
        unsignedToken({ sub: VICTIM, iss: idp.issuer, aud: idp.audience, exp: now() + 3600 }),
      'algorithm is not accepted',
    ],
  ];

  it.each(cases)(
    '%s: 401 with WWW-Authenticate: Bearer and what was wrong',
    async (_name, token, says) => {
      const res = await get(await token());
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(
        /^Bearer realm="orders", error="invalid_token"/,
      );
      expect(res.body.message).toMatch(says);
    },
  );
});
