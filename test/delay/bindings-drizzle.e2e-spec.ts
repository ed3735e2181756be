import { drizzle } from 'drizzle-orm/node-postgres';
import { bigint, bigserial, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import pg from 'pg';
import type { TaskContext } from 'nest-delay';
import { drizzleOn, drizzleTransaction } from 'nest-delay/drizzle';
import { describeWithServer } from '../support/test-database.js';
import {
  Rollback,
  bindingCases,
  refusesOwnTransaction,
  effectRow,
  useBindingApp,
  type BindingUnderTest,
} from './binding-cases.js';

const effect = pgTable('effect', {
  id: bigserial('id', { mode: 'bigint' }).primaryKey(),
  taskId: bigint('task_id', { mode: 'bigint' }).notNull(),
  instance: text('instance').notNull(),
  attempt: integer('attempt').notNull(),
  at: timestamp('at', { withTimezone: true }).notNull(),
});
const schema = { effect };

const effectValues = (context: TaskContext) => {
  const row = effectRow(context);
  return { taskId: BigInt(row.task_id), instance: row.instance, attempt: row.attempt, at: row.at };
};

/** drizzle on node-postgres: `db.transaction(tx => …)`; a handler writes through `drizzleOn(context, { schema })`. */
function drizzleBinding(url: string): BindingUnderTest {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const db = drizzle({ client: pool, schema });
  return {
    inTransaction: (work) => db.transaction((tx) => work(drizzleTransaction(tx))),
    async writeEffect(context: TaskContext) {
      await drizzleOn(context, { schema }).insert(effect).values(effectValues(context));
    },
    close: () => pool.end(),
  };
}

describeWithServer('nest-delay/drizzle', () => {
  const fixture = useBindingApp(drizzleBinding);
  bindingCases(fixture);

  it('reads rows as pg parses them (a timestamptz as a Date), binding values as parameters', async () => {
    const { t, binding } = fixture;
    const hostile = `'); DROP TABLE effect; --`;
    const rows = await binding
      .inTransaction(async (transaction) => {
        const read = await transaction.rows<{ at: Date; same: boolean; word: string }>(
          `SELECT $1::timestamptz AS at, $2::text = $2 AS same, $2 AS word`,
          [new Date(1_000), hostile],
        );
        throw Object.assign(new Rollback(), { read });
      })
      .catch((error: { read?: unknown }) => error.read);
    expect(rows).toEqual([{ at: new Date(1_000), same: true, word: hostile }]);
    expect(await t.query(`SELECT count(*)::int AS n FROM effect`)).toEqual([
      { n: expect.any(Number) },
    ]);
  });

  // drizzle reports a failed statement as "Failed query: …", the driver's error as its cause.
  refusesOwnTransaction(fixture, 'begin', (context) =>
    drizzleOn(context, { schema })
      .transaction(async () => undefined)
      .catch((error: Error) => {
        throw error.cause;
      }),
  );
});
