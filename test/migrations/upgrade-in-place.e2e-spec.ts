import { DataSource } from 'typeorm';
import { delayMigrations } from 'nest-delay';
import { CreateOrders1763800001000 } from '../../migrations/1763800001000-CreateOrders.js';
import { migrations } from '../../migrations/index.js';
import { createTestApp, type TestApp } from '../support/app-factory.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

/**
 * A database created before the engine became a package (its first
 * migration, then the orders tables, and live rows in both) upgrades in place
 * when the app starts with the current migration list: nothing is lost, the
 * pending work still runs, and the schema ends where a new database's does.
 */
const START = Date.UTC(2026, 0, 1);
const ORDER_ID = '6f1c2a34-5b6d-4e7f-8a9b-0c1d2e3f4a5b';

let db: TestDatabase;
let t: TestApp | undefined;

beforeAll(async () => {
  db = await createTestDatabase();
  const before = new DataSource({
    type: 'postgres',
    url: db.url,
    migrations: [delayMigrations[0], CreateOrders1763800001000],
    migrationsTransactionMode: 'each',
    extra: { max: 1 },
  });
  await before.initialize();
  await before.runMigrations();
  const created = new Date(START);
  const deadline = new Date(START + 30 * 60_000);
  await before.query(
    `INSERT INTO orders (id, user_id, amount_cents, status, review_status, created_at, payment_deadline)
     VALUES ($1, 'u-1', 500, 'PENDING_PAYMENT', 'NONE', $2, $3)`,
    [ORDER_ID, created, deadline],
  );
  await before.query(
    `INSERT INTO order_event (order_id, type, actor, data, at) VALUES ($1, 'CREATED', 'user', '{}', $2)`,
    [ORDER_ID, created],
  );
  // An Idempotency-Key from before keys were per user: it becomes its order's user's.
  await before.query(
    `INSERT INTO order_idempotency_key (key, request_hash, order_id, created_at) VALUES ('checkout-old', 'h', $1, $2)`,
    [ORDER_ID, created],
  );
  // A pending task leased by an instance that no longer exists (locked_at set,
  // as the old code wrote it), and one that ran long ago.
  await before.query(
    `INSERT INTO delayed_task (type, key, payload, due_at, locked_by, locked_at, created_at, updated_at)
     VALUES ('order.close-unpaid', $1, $2, $3, 'old-instance', $4, $4, $4)`,
    [`order:${ORDER_ID}:close-unpaid`, { orderId: ORDER_ID }, deadline, created],
  );
  await before.query(
    `INSERT INTO delayed_task (type, key, payload, due_at, executed_at, attempts, created_at, updated_at)
     VALUES ('order.auto-review', 'order:gone:auto-review', '{"orderId":"x"}', $1, $1, 1, $1, $1)`,
    [new Date(START - 86_400_000)],
  );
  await before.destroy();
});

afterAll(async () => {
  await t?.app.close();
  await db?.drop();
});

it('applies only the new migrations, keeps every row, and runs the pending task', async () => {
  t = await createTestApp(db);
  const dataSource = t.app.get(DataSource);
  const applied = await dataSource.query(`SELECT name FROM migrations ORDER BY id`);
  const names = applied.map((row: { name: string }) => row.name);
  // The two it had, then the one it lacked; none twice.
  expect(names.slice(0, 2)).toEqual([delayMigrations[0].name, CreateOrders1763800001000.name]);
  expect([...names].sort()).toEqual(migrations.map((migration) => migration.name).sort());
  const columns = await dataSource.query(
    `SELECT column_name FROM information_schema.columns WHERE table_name = 'delayed_task'`,
  );
  expect(columns.map((c: { column_name: string }) => c.column_name)).not.toContain('locked_at');

  // The old rows; the occurrences the app's schedules planned since are not theirs.
  const tasks = await dataSource.query(
    `SELECT type, key, payload, executed_at IS NOT NULL AS ran FROM delayed_task
     WHERE schedule_name IS NULL ORDER BY id`,
  );
  expect(tasks).toEqual([
    {
      type: 'order.close-unpaid',
      key: `order:${ORDER_ID}:close-unpaid`,
      payload: { orderId: ORDER_ID },
      ran: false,
    },
    {
      type: 'order.auto-review',
      key: 'order:gone:auto-review',
      payload: { orderId: 'x' },
      ran: true,
    },
  ]);

  expect(await dataSource.query(`SELECT user_id, key, order_id FROM user_idempotency_key`)).toEqual(
    [{ user_id: 'u-1', key: 'checkout-old', order_id: ORDER_ID }],
  );

  // The old instance's lease is an orphan: the upgraded app takes the task and runs it on time.
  await t.delay.advanceTo(START + 30 * 60_000);
  const [order] = await dataSource.query(`SELECT status, close_reason FROM orders WHERE id = $1`, [
    ORDER_ID,
  ]);
  expect(order).toEqual({ status: 'CLOSED', close_reason: 'PAYMENT_TIMEOUT' });
});
