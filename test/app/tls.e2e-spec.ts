import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import {
  describeWithPrivatePostgres,
  startPrivatePostgres,
  type PrivatePostgres,
} from '../support/private-postgres.js';
import {
  makeTestCertificates,
  missingOpenssl,
  type TestCertificates,
} from '../support/test-certificates.js';
import { eventually, json, startApp } from './app-process.js';

/**
 * TLS to Postgres, configured in DATABASE_URL alone, as a managed Postgres
 * asks: a private cluster with a certificate from a CA made at test time,
 * which accepts TCP connections over TLS only (hostssl), like one that
 * requires it. node-pg reads sslmode and sslrootcert from the URL, and
 * TypeORM hands the URL to it untouched.
 */
const describeWithTls: jest.Describe = missingOpenssl()
  ? (((name: string, fn: () => void) =>
      describe.skip(`${name} (skipped: ${missingOpenssl()})`, fn)) as unknown as jest.Describe)
  : describeWithPrivatePostgres;

describeWithTls('TLS to Postgres through DATABASE_URL', () => {
  let certs: TestCertificates;
  let server: PrivatePostgres;
  /** postgres://…/orders, without TLS parameters. */
  let plainUrl: string;
  const withParams = (params: string) => (params ? `${plainUrl}?${params}` : plainUrl);

  beforeAll(async () => {
    certs = makeTestCertificates();
    const hba = join(certs.dir, 'pg_hba.conf');
    writeFileSync(hba, 'local all all trust\nhostssl all all 127.0.0.1/32 trust\n');
    server = await startPrivatePostgres({
      ssl: 'on',
      ssl_cert_file: certs.serverCert,
      ssl_key_file: certs.serverKey,
      hba_file: hba,
    });
    plainUrl = server.url.replace(/\/postgres$/, '/orders');
    const admin = new pg.Client({
      connectionString: `${server.url}?sslmode=verify-full&sslrootcert=${certs.ca}`,
    });
    await admin.connect();
    await admin.query('CREATE DATABASE orders');
    await admin.end();
  });

  afterAll(() => {
    server?.destroy();
    certs?.destroy();
  });

  it('sslmode=verify-full with the CA: the app boots, migrates and runs a delayed task, every session encrypted', async () => {
    const app = await startApp({
      DATABASE_URL: withParams(`sslmode=verify-full&sslrootcert=${certs.ca}`),
      ORDER_PAYMENT_TIMEOUT: '1s',
      DELAY_TICK_MS: '100',
    });
    try {
      const created = await json('POST', `${app.baseUrl}/orders`, {
        userId: 'tls',
        amountCents: 700,
      });
      expect(created.status).toBe(201);
      // Closed by its delayed task, claimed and committed over TLS.
      const closed = await eventually(
        () => json('GET', `${app.baseUrl}/orders/${created.body.id}`),
        (res) => res.body.status === 'CLOSED',
        15_000,
      );
      expect(closed.body.closeReason).toBe('PAYMENT_TIMEOUT');

      const admin = new pg.Client({
        connectionString: withParams(`sslmode=verify-full&sslrootcert=${certs.ca}`),
      });
      await admin.connect();
      try {
        const { rows } = await admin.query(
          `SELECT s.ssl, s.version FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
           WHERE a.datname = 'orders' AND a.backend_type = 'client backend'
             AND a.pid <> pg_backend_pid()`,
        );
        expect(rows.length).toBeGreaterThan(0);
        for (const row of rows)
          expect(row).toEqual({ ssl: true, version: expect.stringMatching(/^TLSv1\.[23]$/) });
        const [task] = (
          await admin.query(
            `SELECT executed_at IS NOT NULL AS executed FROM delayed_task WHERE type = 'order.close-unpaid'`,
          )
        ).rows;
        expect(task).toEqual({ executed: true });
      } finally {
        await admin.end();
      }
    } finally {
      expect(await app.stop()).toBe(0);
    }
  }, 60_000);

  it('sslmode=verify-full with the wrong CA: the boot fails, naming the certificate problem', async () => {
    await expect(
      startApp({ DATABASE_URL: withParams(`sslmode=verify-full&sslrootcert=${certs.otherCa}`) }),
    ).rejects.toThrow(
      /exited with 1 before listening:[\s\S]*Unable to connect to the database[\s\S]*Error: unable to verify the first certificate/,
    );
  }, 60_000);

  // node-pg 8 reads sslmode its own way: `require` (and `prefer`, `verify-ca`)
  // verify the certificate and host name as verify-full does, unless the URL
  // also says uselibpqcompat=true; `no-verify` encrypts without verifying.
  const UNVERIFIED = /unable to verify the first certificate/;
  it.each([
    [
      'verify-full, the CA: encrypted, verified',
      () => `sslmode=verify-full&sslrootcert=${certs.ca}`,
      null,
    ],
    ['require, the CA: encrypted, verified', () => `sslmode=require&sslrootcert=${certs.ca}`, null],
    ['require, no CA: refused, verified all the same', () => 'sslmode=require', UNVERIFIED],
    [
      'require with uselibpqcompat=true, no CA: encrypted, unverified',
      () => 'uselibpqcompat=true&sslmode=require',
      null,
    ],
    ['no-verify: encrypted, unverified', () => 'sslmode=no-verify', null],
    [
      'verify-full, another CA: refused',
      () => `sslmode=verify-full&sslrootcert=${certs.otherCa}`,
      UNVERIFIED,
    ],
    [
      'none: refused by a server that requires TLS',
      () => '',
      /no pg_hba.conf entry .* no encryption/,
    ],
  ])('node-pg, sslmode %s', async (_name, params, refused) => {
    const client = new pg.Client({ connectionString: withParams(params()) });
    const connected = client
      .connect()
      .then(() => client.query('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()'));
    if (refused) await expect(connected).rejects.toThrow(refused);
    else expect((await connected).rows).toEqual([{ ssl: true }]);
    await client.end().catch(() => undefined);
  });
});
