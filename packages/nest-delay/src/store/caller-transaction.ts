import type { EntityManager } from 'typeorm';
import { DelayValidationError } from '../errors/delay-errors.js';
import type { AmbientTransaction } from '../delay.options.js';
import type { DelayExecutor, TransactionOptions } from '../task.types.js';

/**
 * A caller's transaction that is not TypeORM's (another ORM's, or plain
 * pg's, through a binding): its statements, and how to run something once it
 * commits when the caller said (else never: the engine cannot see its commit).
 */
export class ForeignTransaction {
  constructor(
    readonly sql: DelayExecutor,
    readonly afterCommit: ((run: () => void) => void) | undefined,
  ) {}
}

/** The caller's transaction as the engine passes it around; undefined: none, the pool's. */
export type CallerTransaction = EntityManager | ForeignTransaction;

/**
 * `{ manager }` or `{ transaction, afterCommit }`, checked: whose transaction
 * a call writes in. A call that names none joins the ambient transaction,
 * when the module has one (its `ambientTransaction` option) and it is open.
 */
export function callerTransaction(
  options: TransactionOptions,
  ambient?: AmbientTransaction,
): CallerTransaction | undefined {
  if (
    ambient &&
    options.manager === undefined &&
    options.transaction === undefined &&
    options.afterCommit === undefined
  ) {
    const current = ambient.current();
    if (current) return callerTransaction(current);
  }
  const { manager, transaction, afterCommit } = options;
  if (transaction === undefined) {
    if (afterCommit !== undefined)
      throw new DelayValidationError(
        'afterCommit',
        'is only for a `transaction`: a TypeORM `manager` reports its own commit',
      );
    return manager;
  }
  if (manager !== undefined)
    throw new DelayValidationError(
      'transaction',
      'and manager were both given: give one of the two (manager for TypeORM, transaction for any other)',
    );
  if (typeof transaction?.rows !== 'function')
    throw new DelayValidationError(
      'transaction',
      'must be a DelayExecutor ({ rows(text, params) }): nest-delay/pg, /prisma, /kysely, /drizzle and /mikro-orm build one',
    );
  if (afterCommit !== undefined && typeof afterCommit !== 'function')
    throw new DelayValidationError('afterCommit', 'must be a function');
  return new ForeignTransaction(transaction, afterCommit);
}
