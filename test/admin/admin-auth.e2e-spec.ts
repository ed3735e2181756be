import { ADMIN_TOKEN, useAdminTestApp } from './admin-test-app.js';
import { bearer } from '../support/auth.js';

const ROUTES: Array<['get' | 'post', string]> = [
  ['get', '/admin/api/tasks'],
  ['get', '/admin/api/tasks/1'],
  ['post', '/admin/api/tasks/1/cancel'],
  ['post', '/admin/api/tasks/1/retry'],
  ['post', '/admin/api/tasks/1/run-now'],
  ['post', '/admin/api/tasks/1/reschedule'],
  ['post', '/admin/api/tasks/retry-dead'],
  ['get', '/admin/api/counts'],
  ['get', '/admin/api/instances'],
  ['get', '/admin/api/wheel'],
];

/** Every response of the app carries these, whatever its status. */
function expectSecurityHeaders(headers: Record<string, string>) {
  expect(headers['x-content-type-options']).toBe('nosniff');
  expect(headers['x-frame-options']).toBe('DENY');
  expect(headers['content-security-policy']).toContain("frame-ancestors 'none'");
  expect(headers['content-security-policy']).toContain("default-src 'self'");
  expect(headers['referrer-policy']).toBe('no-referrer');
  expect(headers['x-powered-by']).toBeUndefined();
}

describe('admin API without ADMIN_TOKEN', () => {
  const ctx = useAdminTestApp({});

  it.each(ROUTES)('is not mounted: %s %s is a 404, token or not', async (method, path) => {
    const bare = await ctx.t.http()[method](path);
    expect(bare.status).toBe(404);
    const authorized = ctx.t.http()[method](path);
    const withToken = await authorized.set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(withToken.status).toBe(404);
    expectSecurityHeaders(withToken.headers);
  });

  it('serves no admin page either: /admin and its assets are 404s', async () => {
    await ctx.t.http().get('/admin').expect(404);
    await ctx.t.http().get('/admin/assets/main.js').expect(404);
  });
});

describe('admin API with ADMIN_TOKEN', () => {
  const ctx = useAdminTestApp();

  it.each(ROUTES)(
    '%s %s without a token is a 401 that says how to authenticate',
    async (method, path) => {
      // Moving past the throttle's window keeps the earlier failures from adding up to a 429.
      ctx.t.clock.advance(61_000);
      const res = await ctx.t.http()[method](path);
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Bearer realm="admin"');
      expect(res.body.message).toMatch(/Authorization: Bearer <token>/);
      expectSecurityHeaders(res.headers);
      expect(res.headers['cache-control']).toBe('no-store');
    },
  );

  it.each([
    ['a wrong token', `Bearer ${ADMIN_TOKEN.slice(0, -1)}x`],
    ['the token with a suffix', `Bearer ${ADMIN_TOKEN}x`],
    ['a prefix of the token', `Bearer ${ADMIN_TOKEN.slice(0, 10)}`],
    ['another scheme', `Basic ${ADMIN_TOKEN}`],
    ['the bare token', ADMIN_TOKEN],
  ])('refuses %s with a 401', async (_name, authorization) => {
    ctx.t.clock.advance(61_000);
    await ctx.t.http().get('/admin/api/counts').set('Authorization', authorization).expect(401);
  });

  it('answers with the token, on every admin response echoing the request id and forbidding caches', async () => {
    ctx.t.clock.advance(61_000);
    const res = await ctx.t.get('/admin/api/counts').set('X-Request-Id', 'req-42').expect(200);
    expect(res.headers['x-request-id']).toBe('req-42');
    expect(res.headers['cache-control']).toBe('no-store');
    expectSecurityHeaders(res.headers);
    // An id too odd to log is replaced by a fresh one.
    const odd = await ctx.t.get('/admin/api/counts').set('X-Request-Id', 'bad id\twith spaces');
    expect(odd.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('throttles wrong tokens after 10 failures in a minute (429 with Retry-After), never the right one', async () => {
    ctx.t.clock.advance(61_000);
    const wrong = () => ctx.t.http().get('/admin/api/counts').set('Authorization', 'Bearer wrong');
    for (let i = 0; i < 10; i++) {
      await wrong().expect(401);
      ctx.t.clock.advance(1_000);
    }
    const refused = await wrong().expect(429);
    // The first failure leaves the window 60 s after it was made: 50 s from now.
    expect(refused.headers['retry-after']).toBe('50');
    expect(refused.body.message).toMatch(/Too many failed admin logins/);
    // The operator, from the same address (a proxy's), is let in all along.
    await ctx.t.get('/admin/api/counts').expect(200);
    ctx.t.clock.advance(49_000);
    await wrong().expect(429);
    await ctx.t.get('/admin/api/counts').expect(200);
    ctx.t.clock.advance(1_000);
    await wrong().expect(401);
  });

  it('puts security headers on every response of the app, not only the admin API', async () => {
    const orders = await ctx.t.http().get('/orders').set('Authorization', bearer('user-1'));
    expect(orders.status).toBe(200);
    expectSecurityHeaders(orders.headers);
    // A user's request without a token too.
    expectSecurityHeaders((await ctx.t.http().get('/orders').expect(401)).headers);
    expectSecurityHeaders((await ctx.t.http().get('/no-such-page')).headers);
  });

  it('never puts a stack trace in a body', async () => {
    const bodies = await Promise.all([
      ctx.t.get('/admin/api/tasks?cursor=nonsense'),
      ctx.t.get('/admin/api/tasks/99999'),
      ctx.t.post('/admin/api/tasks/abc/cancel'),
      ctx.t.get('/admin/api/tasks?limit=5000'),
    ]);
    for (const res of bodies) {
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(JSON.stringify(res.body)).not.toMatch(/\bat .*\.(ts|js):\d+|stack/i);
    }
  });
});

/** Ten wrong tokens as `from` (X-Forwarded-For), then one more as `next`: 401, or 429 when counted as the same client. */
async function failTenThenOnce(
  t: ReturnType<typeof useAdminTestApp>['t'],
  from: string,
  next: string,
) {
  t.clock.advance(61_000);
  const wrong = (address: string) =>
    t
      .http()
      .get('/admin/api/counts')
      .set('Authorization', 'Bearer wrong')
      .set('X-Forwarded-For', address);
  for (let i = 0; i < 10; i++) await wrong(from).expect(401);
  return (await wrong(next)).status;
}

describe('TRUST_PROXY', () => {
  describe('unset: the socket is the client, whatever X-Forwarded-For says', () => {
    const ctx = useAdminTestApp({ ADMIN_TOKEN });
    it('counts two forwarded addresses as one client', async () => {
      expect(await failTenThenOnce(ctx.t, '203.0.113.1', '203.0.113.2')).toBe(429);
    });
  });

  describe('set to loopback (the proxy in front): X-Forwarded-For names the client', () => {
    const ctx = useAdminTestApp({ ADMIN_TOKEN, TRUST_PROXY: 'loopback' });
    it("counts each forwarded address apart: one client's failures lock out no other", async () => {
      expect(await failTenThenOnce(ctx.t, '203.0.113.1', '203.0.113.2')).toBe(401);
    });
  });
});
