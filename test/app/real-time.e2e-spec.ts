import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../src/config/app-config.js';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';
import { eventually, json, startApp } from './app-process.js';

// These boot `node dist/src/main.js` (built by `pretest`) in a child process, with
// the system clock and tiny delays: the wiring, proven without a ManualClock.

describe('the compiled service in real time, on the embedded database', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'orders-pglite-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('closes an unpaid order after ORDER_PAYMENT_TIMEOUT, keeps its data across a restart', async () => {
    const env = { PGLITE_DIR: dataDir, ORDER_PAYMENT_TIMEOUT: '1s', DELAY_TICK_MS: '100' };
    const app = await startApp(env);
    let orderId: string;
    try {
      const created = await json('POST', `${app.baseUrl}/orders`, {
        userId: 'real-time',
        amountCents: 500,
      });
      expect(created.status).toBe(201);
      orderId = created.body.id;
      const deadline = Date.parse(created.body.paymentDeadline);
      expect(deadline - Date.parse(created.body.createdAt)).toBe(1000);
      const closed = await eventually(
        () => json('GET', `${app.baseUrl}/orders/${orderId}`),
        (res) => res.body.status === 'CLOSED',
        10_000,
      );
      expect(closed.body.closeReason).toBe('PAYMENT_TIMEOUT');
      // Never early: closed at or after its deadline, and within a few ticks of it.
      const closedAt = Date.parse(closed.body.closedAt);
      expect(closedAt).toBeGreaterThanOrEqual(deadline);
      expect(closedAt - deadline).toBeLessThan(5000);
    } finally {
      expect(await app.stop()).toBe(0);
    }
    const again = await startApp(env);
    try {
      // The customer's notification follows the close (it may run before the stop or after the restart).
      const res = await eventually(
        () => json('GET', `${again.baseUrl}/orders/${orderId!}/history`),
        (r) => r.body.length >= 3,
        10_000,
      );
      expect(res.body.map((e: { type: string; by: string }) => `${e.type}/${e.by}`)).toEqual([
        'CREATED/user',
        'CLOSED/system',
        'CUSTOMER_NOTIFIED/system',
      ]);
    } finally {
      expect(await again.stop()).toBe(0);
    }
  }, 60_000);

  it('refuses to start on a bad setting, naming the variable', async () => {
    await expect(
      startApp({ PGLITE_DIR: dataDir, ORDER_PAYMENT_TIMEOUT: 'soon' }, 15_000),
    ).rejects.toThrow(/Invalid configuration: ORDER_PAYMENT_TIMEOUT must be a duration/);
    expect(ConfigError.name).toBe('ConfigError');
  }, 30_000);
});

describeWithServer('a crash (SIGKILL) with tasks in flight', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  it('the next process closes every order exactly once', async () => {
    const env = {
      DATABASE_URL: db.url,
      ORDER_PAYMENT_TIMEOUT: '2s',
      DELAY_TICK_MS: '100',
      DELAY_LEASE: '2s',
      DELAY_INSTANCE_ID: 'crashes',
    };
    const first = await startApp(env);
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const res = await json('POST', `${first.baseUrl}/orders`, {
        userId: `crash-${i}`,
        amountCents: 100 + i,
      });
      expect(res.status).toBe(201);
      ids.push(res.body.id);
    }
    // Kill it while it is closing them: once the first order is closed, others are in flight.
    await eventually(
      () => json('GET', `${first.baseUrl}/orders/${ids[0]}`),
      (res) => res.body.status === 'CLOSED',
      15_000,
    );
    await first.kill();

    // Another instance id: it must wait for the dead one's lease to expire, then take over.
    const second = await startApp({ ...env, DELAY_INSTANCE_ID: 'survivor' });
    try {
      for (const id of ids) {
        await eventually(
          () => json('GET', `${second.baseUrl}/orders/${id}`),
          (res) => res.body.status === 'CLOSED',
          15_000,
        );
      }
      for (const id of ids) {
        const history = await json('GET', `${second.baseUrl}/orders/${id}/history`);
        expect(history.body.filter((e: { type: string }) => e.type === 'CLOSED')).toHaveLength(1);
      }
    } finally {
      expect(await second.stop()).toBe(0);
    }
  }, 90_000);
});
