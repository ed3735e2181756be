import type { ClaimClient } from '../task.types.js';

/** A statement that would begin, end or undo a transaction: the claim's is the engine's to end. */
const TRANSACTION_CONTROL =
  /^\s*(begin|start\s+transaction|commit|end|rollback|abort)\b(?!\s+to\b)/i;

/**
 * The claim's pg client as lent to an ORM inside a handler: a wrapper of
 * ours (the client itself is never changed) that forwards every statement
 * and refuses those that would end the claim's transaction (an ORM's own
 * `transaction()` sends BEGIN, then COMMIT: that would commit the claim
 * early, without its fate), and whose release does nothing: the claim
 * gives the connection back when it commits.
 */
export function lentClient(ctx: { client: ClaimClient }): LentClient {
  const client = ctx.client as unknown as PgQuery;
  return {
    query(config: string | { text: string }, values?: unknown[]) {
      const text = typeof config === 'string' ? config : config.text;
      if (TRANSACTION_CONTROL.test(text))
        return Promise.reject(
          new Error(
            `"${text.trim().split(/\s+/)[0]}" refused: a handler runs inside its claim's transaction, ` +
              'which the engine commits with the task; use a savepoint for work that may fail alone',
          ),
        );
      return client.query(config, values);
    },
    release() {},
  };
}

/** node-pg's query, in both forms ORMs call it: text, or a config object (drizzle's). */
interface PgQuery {
  query(config: string | { text: string }, values?: unknown[]): Promise<any>;
}

export interface LentClient extends PgQuery {
  release(): void;
}
