import { Kysely, PostgresDialect, type Generated } from 'kysely';
import pg from 'pg';
import type { TaskContext } from 'nest-delay';
import { kyselyOn, kyselyTransaction } from 'nest-delay/kysely';
import { describeWithServer } from '../support/test-database.js';
import {
  bindingCases,
  refusesOwnTransaction,
  effectRow,
  useBindingApp,
  type BindingUnderTest,
} from './binding-cases.js';

interface Database {
  effect: { id: Generated<string>; task_id: string; instance: string; attempt: number; at: Date };
}

/** Kysely on a PostgresDialect: `db.transaction().execute(trx => …)`; a handler writes through `kyselyOn(context)`. */
function kyselyBinding(url: string): BindingUnderTest {
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 2 }) }),
  });
  return {
    inTransaction: (work) => db.transaction().execute((trx) => work(kyselyTransaction(trx))),
    async writeEffect(context: TaskContext) {
      await kyselyOn<Database>(context).insertInto('effect').values(effectRow(context)).execute();
    },
    close: () => db.destroy(),
  };
}

describeWithServer('nest-delay/kysely', () => {
  const fixture = useBindingApp(kyselyBinding);
  bindingCases(fixture);

  refusesOwnTransaction(fixture, 'begin', (context) =>
    kyselyOn<Database>(context)
      .transaction()
      .execute(async () => undefined),
  );
});
