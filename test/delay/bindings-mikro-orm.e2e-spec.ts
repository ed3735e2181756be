import { EntitySchema, MikroORM, type EntityManager } from '@mikro-orm/postgresql';
import type { TaskContext } from 'nest-delay';
import { mikroOrmOn, mikroOrmTransaction } from 'nest-delay/mikro-orm';
import { describeWithServer } from '../support/test-database.js';
import {
  Rollback,
  bindingCases,
  effectRow,
  handlerHooks,
  refusesOwnTransaction,
  useBindingApp,
  type BindingUnderTest,
} from './binding-cases.js';

interface Effect {
  id: string;
  task_id: string;
  instance: string;
  attempt: number;
  at: Date;
}

const EffectSchema = new EntitySchema<Effect>({
  name: 'Effect',
  tableName: 'effect',
  properties: {
    id: { type: 'bigint', primary: true, autoincrement: true },
    task_id: { type: 'bigint', fieldName: 'task_id' },
    instance: { type: 'string' },
    attempt: { type: 'integer' },
    at: { type: 'Date', fieldName: 'at' },
  },
});

/**
 * MikroORM 7 on PostgreSQL: `em.transactional(em => …)`; a handler flushes
 * through `await mikroOrmOn(context, em)`, a fork on the claim's transaction.
 */
function mikroOrmBinding(url: string): BindingUnderTest & { em(): Promise<EntityManager> } {
  const orm = MikroORM.init({
    clientUrl: url,
    entities: [EffectSchema],
    pool: { min: 0, max: 2 },
    allowGlobalContext: true,
  });
  const em = async () => (await orm).em;
  return {
    em,
    inTransaction: async (work) =>
      (await em()).fork().transactional((tx) => work(mikroOrmTransaction(tx))),
    async writeEffect(context: TaskContext) {
      const fork = await mikroOrmOn(context, await em());
      fork.create(EffectSchema, effectRow(context) as Effect);
      await fork.flush();
    },
    close: async () => (await orm).close(),
  };
}

describeWithServer('nest-delay/mikro-orm', () => {
  const fixture = useBindingApp(mikroOrmBinding);
  bindingCases(fixture);

  it('refuses an EntityManager outside a transaction, naming what to pass', async () => {
    const { binding } = fixture as unknown as { binding: ReturnType<typeof mikroOrmBinding> };
    const em = (await binding.em()).fork();
    expect(() => mikroOrmTransaction(em)).toThrow(/not inside a transaction.*em.transactional/);
  });

  // em.commit() of the fork would end the claim's transaction.
  refusesOwnTransaction(fixture, 'COMMIT', async (context) => {
    const { binding } = fixture as unknown as { binding: ReturnType<typeof mikroOrmBinding> };
    await (await mikroOrmOn(context, await binding.em())).commit();
  });

  it('in a handler, em.transactional is a savepoint of the claim: a failing one undoes its own writes only', async () => {
    const { t, binding } = fixture as unknown as {
      t: typeof fixture.t;
      binding: ReturnType<typeof mikroOrmBinding>;
    };
    handlerHooks.afterWrite = async (context) => {
      const fork = await mikroOrmOn(context, await binding.em());
      await expect(
        fork.transactional(async (inner) => {
          inner.create(EffectSchema, { ...effectRow(context), attempt: 99 } as Effect);
          await inner.flush();
          throw new Rollback();
        }),
      ).rejects.toBeInstanceOf(Rollback);
      await fork.transactional(async (inner) => {
        inner.create(EffectSchema, { ...effectRow(context), attempt: 42 } as Effect);
      });
    };
    const task = await t.delay.schedule({ type: 'binding.effect', delay: 0 });
    await t.tester.runDue();
    expect(await t.delay.get({ id: task.id })).toMatchObject({ state: 'executed', attempts: 1 });
    const rows = await t.query<{ attempt: number }>(
      `SELECT attempt FROM effect WHERE task_id = $1 ORDER BY attempt`,
      [task.id],
    );
    expect(rows.map((row) => row.attempt)).toEqual([1, 42]);
  });
});
