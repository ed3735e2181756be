import { DataSource } from 'typeorm';
import { migrations } from '../../migrations/index.js';
import { IdempotencyKeyPerUser1766000000000 } from '../../migrations/1766000000000-IdempotencyKeyPerUser.js';
import { IdempotencyKeysCopied1766000000001 } from '../../migrations/1766000000001-IdempotencyKeysCopied.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

// The migration that makes Idempotency-Keys per user, both ways: up, two
// users hold one key, and the shared table of the release before stays as
// it was; down, that table is all there is again, and up again copies it.

const AT = new Date(Date.UTC(2026, 0, 1));

let db: TestDatabase;
let dataSource: DataSource;

beforeAll(async () => {
  db = await createTestDatabase();
  dataSource = new DataSource({
    type: 'postgres',
    url: db.url,
    migrations,
    migrationsTransactionMode: 'each',
    extra: { max: 1 },
  });
  await dataSource.initialize();
  await dataSource.runMigrations();
});

afterAll(async () => {
  await dataSource?.destroy();
  await db?.drop();
});

async function order(userId: string): Promise<string> {
  const [{ id }] = await dataSource.query(
    `INSERT INTO orders (id, user_id, amount_cents, status, review_status, created_at, payment_deadline)
     VALUES (gen_random_uuid(), $1, 100, 'PENDING_PAYMENT', 'NONE', $2, $2) RETURNING id`,
    [userId, AT],
  );
  return id;
}

const key = (userId: string, orderId: string, minutes: number) =>
  dataSource.query(
    `INSERT INTO user_idempotency_key (user_id, key, request_hash, order_id, created_at)
     VALUES ($1, 'shared-key', 'h', $2, $3)`,
    [userId, orderId, new Date(AT.getTime() + minutes * 60_000)],
  );

it('keys one key per user, beside the shared keys, and back', async () => {
  const ann = await order('ann');
  const bob = await order('bob');
  await key('ann', ann, 0);
  await key('bob', bob, 5);
  await expect(key('ann', ann, 10)).rejects.toThrow(/user_idempotency_key_pkey/);
  // What the release before this one wrote, in the table it still reads.
  await dataSource.query(
    `INSERT INTO order_idempotency_key (key, request_hash, order_id, created_at) VALUES ('old-key', 'h', $1, $2)`,
    [ann, AT],
  );

  const last = await dataSource.query(`SELECT name FROM migrations ORDER BY id DESC LIMIT 2`);
  expect(last).toEqual([
    { name: IdempotencyKeysCopied1766000000001.name },
    { name: IdempotencyKeyPerUser1766000000000.name },
  ]);
  await dataSource.undoLastMigration({ transaction: 'each' });
  await dataSource.undoLastMigration({ transaction: 'each' });
  expect(await dataSource.query(`SELECT to_regclass('user_idempotency_key') AS t`)).toEqual([
    { t: null },
  ]);

  await dataSource.runMigrations();
  expect(await dataSource.query(`SELECT user_id, key, order_id FROM user_idempotency_key`)).toEqual(
    [{ user_id: 'ann', key: 'old-key', order_id: ann }],
  );
});
