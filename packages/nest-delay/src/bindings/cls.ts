import { AsyncLocalStorage } from 'node:async_hooks';
import type { Propagation, TransactionalAdapter, TransactionHost } from '@nestjs-cls/transactional';
import type { AmbientTransaction } from '../delay.options.js';
import type { TaskContext, TransactionOptions } from '../task.types.js';

/**
 * `nest-delay/cls`: the engine and `@nestjs-cls/transactional` (3.x) share
 * one ambient transaction, whichever adapter the app uses. Two pieces, both
 * given the conversions of your ORM's binding:
 *
 * - `withClaimTransactions(adapter, claimTx)` wraps your adapter for
 *   `ClsPluginTransactional`: while the engine enters a handler, the
 *   transaction the TransactionHost starts is the claim's (`claimTx(context)`,
 *   your ORM's client on it), not a new one;
 * - `clsAmbientTransaction(txHost, join)` is DelayModule's
 *   `ambientTransaction` option: a call that names no transaction joins the
 *   host's current one (`join(tx)`: `{ manager }` or `{ transaction }`), and
 *   each handler runs in a transaction of the host, which the wrapped adapter
 *   makes the claim's.
 *
 * Only types are imported from `@nestjs-cls/transactional`: this file loads
 * without it.
 */

/** The task whose handler the engine is entering, while TransactionHost starts its transaction. */
const entering = new AsyncLocalStorage<TaskContext>();

/**
 * Your TransactionalAdapter, the same but for one thing: a transaction the
 * host starts for a handler the engine is entering is that handler's claim
 * transaction, `claimTx(context)`. Every other transaction (outside
 * handlers, or `Propagation.RequiresNew` inside one) is the adapter's own.
 */
export function withClaimTransactions<TConnection, TTx, TOptions>(
  adapter: TransactionalAdapter<TConnection, TTx, TOptions>,
  claimTx: (context: TaskContext) => TTx,
): TransactionalAdapter<TConnection, TTx, TOptions> {
  const lifecycle = (
    [
      'onModuleInit',
      'onModuleDestroy',
      'onApplicationBootstrap',
      'beforeApplicationShutdown',
      'onApplicationShutdown',
    ] as const
  ).flatMap((hook) => {
    const fn = adapter[hook] as ((...args: unknown[]) => unknown) | undefined;
    return fn ? [[hook, (...args: unknown[]) => fn.apply(adapter, args)]] : [];
  });
  return {
    connectionToken: adapter.connectionToken,
    connection: adapter.connection,
    defaultTxOptions: adapter.defaultTxOptions,
    extraProviderTokens: adapter.extraProviderTokens,
    supportsTransactionProxy: adapter.supportsTransactionProxy,
    ...Object.fromEntries(lifecycle),
    optionsFactory(connection, extraProviders) {
      const own = adapter.optionsFactory(connection, extraProviders);
      return {
        ...own,
        wrapWithTransaction(options, fn, setTx) {
          const context = entering.getStore();
          if (!context) return own.wrapWithTransaction(options, fn, setTx);
          setTx(claimTx(context));
          // The handler runs outside `entering`: a transaction it starts
          // itself (RequiresNew) is a new one of the adapter.
          return entering.exit(fn);
        },
      };
    },
  };
}

/**
 * DelayModule's `ambientTransaction` on `txHost` (a TransactionHost whose
 * adapter `withClaimTransactions` wrapped): DelayService calls that name no
 * transaction join the host's current one, `join(txHost.tx)`; each handler
 * runs in a transaction of the host that is its claim's, so what your
 * services write through `txHost.tx`, and what they schedule, commits with
 * the task, or not at all.
 */
export function clsAmbientTransaction<TTx>(
  txHost: Pick<TransactionHost<any>, 'isTransactionActive' | 'withTransaction'> & {
    readonly tx: unknown;
  },
  join: (tx: TTx) => TransactionOptions,
): AmbientTransaction {
  return {
    current: () => (txHost.isTransactionActive() ? join(txHost.tx as TTx) : undefined),
    runHandler: (context, run) =>
      // RequiresNew: never a transaction that happened to be open where the claim ran.
      entering.run(context, () =>
        txHost.withTransaction('REQUIRES_NEW' as Propagation.RequiresNew, run),
      ),
  };
}
