import { DelayValidationError, type DelayObserver } from 'nest-delay';
import { describeWithServer } from '../support/test-database.js';
import {
  Rollback,
  bindingCases,
  effectRow,
  handlerHooks,
  pgBinding,
  useBindingApp,
} from './binding-cases.js';

const scheduled: unknown[] = [];
const observer: DelayObserver = { onScheduled: (event) => void scheduled.push(event) };

describeWithServer('nest-delay/pg', () => {
  const fixture = useBindingApp(pgBinding, { observer });
  bindingCases(fixture);

  it('a handler writes through context.sql on the same transaction', async () => {
    const { t } = fixture;
    const binding = handlerHooks.binding!;
    const writeEffect = binding.writeEffect;
    binding.writeEffect = async (context) => {
      const row = effectRow(context);
      await context.sql.rows(
        `INSERT INTO effect (task_id, instance, attempt, at) VALUES ($1, $2, $3, $4)`,
        [row.task_id, row.instance, row.attempt, row.at],
      );
    };
    try {
      const task = await t.delay.schedule({
        type: 'binding.effect',
        delay: 0,
        payload: { fail: true },
      });
      await t.tester.runDue();
      expect(await t.effects(task.id)).toBe(0);
      await t.tester.advance('10s');
      expect(await t.effects(task.id)).toBe(1);
    } finally {
      binding.writeEffect = writeEffect;
    }
  });

  it('refuses manager and transaction together, and afterCommit without a transaction', async () => {
    const { t } = fixture;
    const both = t.dataSource.transaction((manager) =>
      t.delay.schedule(
        { type: 'binding.effect', key: 'both', delay: '1m' },
        { manager, transaction: { rows: async () => [] } },
      ),
    );
    await expect(both).rejects.toThrow(DelayValidationError);
    await expect(both).rejects.toThrow(/transaction and manager were both given/);
    await expect(t.delay.cancel({ key: 'x' }, { afterCommit: () => undefined })).rejects.toThrow(
      /afterCommit is only for a `transaction`/,
    );
    await expect(
      t.delay.schedule({ type: 'binding.effect', delay: '1m' }, { transaction: {} as never }),
    ).rejects.toThrow(/transaction must be a DelayExecutor/);
    expect(await t.query(`SELECT id FROM delayed_task WHERE key = 'both'`)).toEqual([]);
  });

  describe('what the engine hears of a commit it cannot see', () => {
    beforeEach(async () => {
      await fixture.t.quiesce();
      scheduled.length = 0;
    });

    it('without afterCommit: no onScheduled, and a task that fired before the commit runs at the next loader round', async () => {
      const { t, binding } = fixture;
      let id = '';
      const committed = binding.inTransaction(async (transaction) => {
        const task = await t.delay.schedule({ type: 'binding.effect', delay: 0 }, { transaction });
        id = task.id;
        // Held at once; fired before the commit, its claim finds no row and lets it go.
        expect(t.tester.isHeld(id)).toBe(true);
        await t.tester.runDue();
        expect(t.tester.isHeld(id)).toBe(false);
      });
      await committed;
      await t.tester.runDue();
      expect(await t.effects(id)).toBe(0);
      await t.tester.refresh();
      await t.tester.runDue();
      expect(await t.effects(id)).toBe(1);
      expect(scheduled).toEqual([]);
    });

    it('with afterCommit: onScheduled and the hold come when it runs them, after the commit, never on a rollback', async () => {
      const { t, binding } = fixture;
      const queued: Array<() => void> = [];
      const afterCommit = (run: () => void) => void queued.push(run);
      await expect(
        binding.inTransaction(async (transaction) => {
          await t.delay.schedule(
            { type: 'binding.effect', delay: '1m' },
            { transaction, afterCommit },
          );
          throw new Rollback();
        }),
      ).rejects.toBeInstanceOf(Rollback);
      // Rolled back: the caller drops what it queued.
      queued.length = 0;

      let id = '';
      await binding.inTransaction(async (transaction) => {
        id = (
          await t.delay.schedule({ type: 'binding.effect', delay: 0 }, { transaction, afterCommit })
        ).id;
        await t.tester.runDue();
        expect(scheduled).toEqual([]);
      });
      expect(scheduled).toEqual([]);
      for (const run of queued.splice(0)) run();
      expect(scheduled).toEqual([expect.objectContaining({ id, type: 'binding.effect' })]);
      // Held again at the commit: it runs without a loader round.
      expect(t.tester.isHeld(id)).toBe(true);
      await t.tester.runDue();
      expect(await t.effects(id)).toBe(1);
    });
  });
});
