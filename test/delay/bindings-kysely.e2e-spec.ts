import { Kysely, PostgresDialect, type Generated } from 'kysely';
import pg from 'pg';
import type { TaskContext } from 'nest-delay';
import { kyselyOn, kyselyTransaction } from 'nest-delay/kysely';
import { describeWithServer } from '../support/test-database.js';
import {
  bindingCases,
  effectRow,
  handlerHooks,
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

  it("refuses a transaction of its own on the claim's connection: the attempt fails, nothing commits early", async () => {
    const { t } = fixture;
    handlerHooks.afterWrite = async (context) => {
      if (context.attempt === 1)
        await kyselyOn<Database>(context)
          .transaction()
          .execute(async () => undefined);
    };
    const task = await t.delay.schedule({ type: 'binding.effect', delay: 0 });
    await t.tester.runDue();
    expect(await t.effects(task.id)).toBe(0);
    const failed = await t.delay.get({ id: task.id });
    expect(failed).toMatchObject({ state: 'pending', attempts: 1 });
    expect(failed!.lastError).toMatch(
      /"begin" refused: a handler runs inside its claim's transaction/,
    );
    await t.tester.advance('10s');
    expect(await t.effects(task.id)).toBe(1);
  });
});
