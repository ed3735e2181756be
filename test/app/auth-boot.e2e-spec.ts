import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { json, startApp } from './app-process.js';

// The compiled service as `npm start` and `npm run start:prod` run it, on the
// embedded database in a directory of its own: how it finds its users' tokens.

/** `npm run token -- <args>` (its compiled script) in `cwd`, with `env`. */
function token(cwd: string, args: string[], env: Record<string, string> = {}) {
  const run = spawnSync(process.execPath, [resolve('dist/src/auth/token-cli.js'), ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
  });
  return { status: run.status, stdout: run.stdout.trim(), stderr: run.stderr.trim() };
}

describe('users’ tokens at boot, on the embedded database', () => {
  const dirs: string[] = [];
  const freshDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'orders-auth-'));
    dirs.push(dir);
    return dir;
  };
  afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  it('needs no configuration in development: a secret made once, and `npm run token` signs with it', async () => {
    const dir = freshDir();
    const app = await startApp({}, 60_000, { cwd: dir, testSecret: false });
    let ann: string;
    try {
      expect(app.output()).toContain('npm run -s token -- <userId> [--admin]');
      expect(app.output()).toContain('development secret just made in .data/dev-auth-secret');
      const file = join(dir, '.data', 'dev-auth-secret');
      expect(statSync(file).mode & 0o777).toBe(0o600);

      const issued = token(dir, ['ann']);
      expect(issued).toMatchObject({ status: 0, stderr: '' });
      ann = `Bearer ${issued.stdout}`;
      const created = await json('POST', `${app.baseUrl}/orders`, { amountCents: 250 }, ann);
      expect(created).toMatchObject({ status: 201, body: { userId: 'ann', amountCents: 250 } });
      const refused = await json('GET', `${app.baseUrl}/orders`, undefined, null);
      expect(refused.status).toBe(401);
      const ops = `Bearer ${token(dir, ['ops', '--admin']).stdout}`;
      const all = await json('GET', `${app.baseUrl}/orders?userId=ann`, undefined, ops);
      expect(all.body.items.map((o: { id: string }) => o.id)).toEqual([created.body.id]);
      expect(token(dir, [])).toMatchObject({
        status: 2,
        stderr: expect.stringContaining('usage: npm run -s token'),
      });
    } finally {
      expect(await app.stop()).toBe(0);
    }
    // Restarted, it keeps its secret: tokens it gave out still work.
    const again = await startApp({}, 60_000, { cwd: dir, testSecret: false });
    try {
      expect(again.output()).toContain('development secret in .data/dev-auth-secret');
      expect((await json('GET', `${again.baseUrl}/orders`, undefined, ann!)).status).toBe(200);
    } finally {
      expect(await again.stop()).toBe(0);
    }
  });

  it('refuses to start in production without a way to check tokens, naming the variables', async () => {
    const dir = freshDir();
    const production = { NODE_ENV: 'production', NOTIFICATION_PROVIDER: 'fake' };
    await expect(startApp(production, 30_000, { cwd: dir, testSecret: false })).rejects.toThrow(
      /exited with 1 before listening:\nInvalid configuration: AUTH_JWT_SECRET or AUTH_JWKS_URL must be set with NODE_ENV=production: .*AUTH_DISABLED=true/,
    );
    // No development secret in production.
    expect(existsSync(join(dir, '.data', 'dev-auth-secret'))).toBe(false);
    const weak = 'orders-orders-orders-orders-orders';
    const failed = startApp({ ...production, AUTH_JWT_SECRET: weak }, 30_000, { cwd: dir });
    await expect(failed).rejects.toThrow(/AUTH_JWT_SECRET is too weak/);
    await expect(failed).rejects.not.toThrow(weak);
  });

  it('runs without tokens in production only when AUTH_DISABLED=true says so, warning at boot', async () => {
    const dir = freshDir();
    const env = { NODE_ENV: 'production', NOTIFICATION_PROVIDER: 'fake', AUTH_DISABLED: 'true' };
    const app = await startApp(env, 60_000, { cwd: dir });
    try {
      expect(app.output()).toMatch(
        /"level":"warn".*AUTH_DISABLED=true: the orders API checks no token/,
      );
      const created = await json(
        'POST',
        `${app.baseUrl}/orders`,
        { userId: 'u-7', amountCents: 5 },
        null,
      );
      expect(created).toMatchObject({ status: 201, body: { userId: 'u-7' } });
      const anonymous = await json('POST', `${app.baseUrl}/orders`, { amountCents: 5 }, null);
      expect(anonymous.status).toBe(400);
      expect(anonymous.body.message).toContain('userId is required: AUTH_DISABLED=true');
      const read = await json('GET', `${app.baseUrl}/orders/${created.body.id}`, undefined, null);
      expect(read.status).toBe(200);
    } finally {
      expect(await app.stop()).toBe(0);
    }
  });
});
