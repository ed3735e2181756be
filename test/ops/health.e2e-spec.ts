import { execFile } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import request from 'supertest';
import { useOrdersApp } from '../orders/orders-api.js';
import { createTestApp } from '../support/app-factory.js';
import { eventually } from '../app/app-process.js';
import { adminUrl, createTestDatabase, describeWithServer } from '../support/test-database.js';

describe('probes', () => {
  const ctx = useOrdersApp();

  it('answers live while the process runs', async () => {
    const res = await ctx.api.http().get('/health/live').expect(200);
    expect(res.body).toMatchObject({ status: 'ok' });
  });

  it('answers ready when the database, its migrations and the delay runtime with its lease are', async () => {
    const res = await ctx.api.http().get('/health/ready').expect(200);
    expect(res.body.status).toBe('ok');
    expect(res.body.info).toMatchObject({
      database: { status: 'up' },
      migrations: { status: 'up' },
      delay: { status: 'up', instanceId: expect.any(String), leaseExpiresAt: expect.any(String) },
    });
  });

  it('answers 503 naming the migrations while one is pending', async () => {
    // A second app on the same database, whose check has not yet seen them applied.
    const t = await createTestApp(ctx.db);
    const [last] = await ctx.api.query<{ id: number; timestamp: string; name: string }>(
      `SELECT id, timestamp, name FROM migrations ORDER BY id DESC LIMIT 1`,
    );
    await ctx.api.query(`DELETE FROM migrations WHERE id = $1`, [last.id]);
    try {
      const res = await ctx.api.http().get('/health/ready');
      const fresh = await request(t.app.getHttpServer()).get('/health/ready');
      // The first app saw them applied already: it stays ready.
      expect(res.status).toBe(200);
      expect(fresh.status).toBe(503);
      expect(fresh.body.error).toEqual({
        migrations: { status: 'down', message: 'migrations are pending; run them' },
      });
    } finally {
      await ctx.api.query(`INSERT INTO migrations (id, timestamp, name) VALUES ($1, $2, $3)`, [
        last.id,
        last.timestamp,
        last.name,
      ]);
      await t.app.close();
    }
  });

  it("gives the container healthcheck's exit code: 0 when ready, 1 otherwise (the compiled probe script)", async () => {
    const server = ctx.t.app.getHttpServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const exitCode = (path: string) =>
        new Promise<number>((resolve) =>
          execFile(
            process.execPath,
            ['dist/src/ops/health/probe.js', path],
            { env: { ...process.env, PORT: String(port) } },
            (error) => resolve(error ? Number(error.code) : 0),
          ),
        );
      expect(await exitCode('/health/ready')).toBe(0);
      expect(await exitCode('/no-such-probe')).toBe(1);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('answers 503 naming the delay runtime once it stopped, and stays live', async () => {
    await ctx.t.delay.crash();
    const res = await ctx.api.http().get('/health/ready').expect(503);
    expect(res.body.status).toBe('error');
    expect(Object.keys(res.body.error)).toEqual(['delay']);
    expect(res.body.error.delay).toMatchObject({
      status: 'down',
      message: 'the delay runtime is not running',
    });
    await ctx.api.http().get('/health/live').expect(200);
  });
});

describeWithServer('readiness without the database', () => {
  it('answers 503 naming the database while it refuses connections, and 200 once it is back', async () => {
    const db = await createTestDatabase();
    const t = await createTestApp(db);
    const name = new URL(db.url).pathname.slice(1);
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    const http = request(t.app.getHttpServer());
    try {
      await http.get('/health/ready').expect(200);
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
      await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`,
        [name],
      );
      const res = await http.get('/health/ready').expect(503);
      expect(res.body.error.database).toMatchObject({ status: 'down' });
      await http.get('/health/live').expect(200);
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
      // At once directly; behind a pooler, at its next login (server_login_retry).
      const back = await eventually(
        () => http.get('/health/ready'),
        (res) => res.status === 200,
        5_000,
      );
      expect(back.body.info?.database).toMatchObject({ status: 'up' });
    } finally {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`).catch(() => undefined);
      await admin.end();
      await t.app.close();
      await db.drop();
    }
  });
});
