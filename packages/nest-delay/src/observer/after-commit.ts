import type {
  DataSource,
  EntitySubscriberInterface,
  QueryRunner,
  TransactionCommitEvent,
  TransactionRollbackEvent,
} from 'typeorm';
import { transactionDepth as depthOf } from '../store/claim-connection.js';
import { ForeignTransaction, type CallerTransaction } from '../store/caller-transaction.js';

interface Waiting {
  /** The caller's transaction depth when it was queued (savepoints nest). */
  depth: number;
  run: () => void;
}

/**
 * Runs a notification once the caller's transaction commits, and drops it if
 * that transaction (or the savepoint it was written in) rolls back: a write
 * through `{ manager }` is not a fact until then. Without a transaction it runs at once.
 */
export class AfterCommit implements EntitySubscriberInterface {
  /** Attached instances, for the savepoints TypeORM does not see (below). */
  private static readonly attached = new Set<AfterCommit>();
  private readonly waiting = new WeakMap<QueryRunner, Waiting[]>();
  /** How many were queued when the runner's raw savepoint was taken. */
  private readonly marks = new WeakMap<QueryRunner, number>();

  /** Without a DataSource (the engine on its own pool) no `{ manager }` reaches it: attach does nothing. */
  constructor(private readonly dataSource: DataSource | undefined) {}

  /** A savepoint taken with plain SQL, which TypeORM's events do not report: what is queued after it is undone by `rolledBackToSavepoint`. */
  static savepoint(runner: QueryRunner | undefined): void {
    if (!runner) return;
    for (const instance of AfterCommit.attached)
      instance.marks.set(runner, instance.waiting.get(runner)?.length ?? 0);
  }

  static rolledBackToSavepoint(runner: QueryRunner | undefined): void {
    if (!runner) return;
    for (const instance of AfterCommit.attached) {
      const list = instance.waiting.get(runner);
      if (list) list.length = Math.min(list.length, instance.marks.get(runner) ?? 0);
    }
  }

  attach(): void {
    if (!this.dataSource) return;
    if (!this.dataSource.subscribers.includes(this)) this.dataSource.subscribers.push(this);
    AfterCommit.attached.add(this);
  }

  detach(): void {
    if (!this.dataSource) return;
    const at = this.dataSource.subscribers.indexOf(this);
    if (at !== -1) this.dataSource.subscribers.splice(at, 1);
    AfterCommit.attached.delete(this);
  }

  /**
   * A caller's `transaction` of another ORM (DelayService's option) is not
   * seen committing: `run` goes to the `afterCommit` given with it, or is dropped.
   */
  run(caller: CallerTransaction | undefined, run: () => void): void {
    if (caller instanceof ForeignTransaction) return caller.afterCommit?.(run);
    const runner = caller?.queryRunner;
    if (!runner || !runner.isTransactionActive) return run();
    let list = this.waiting.get(runner);
    if (!list) this.waiting.set(runner, (list = []));
    list.push({ depth: depthOf(runner), run });
  }

  afterTransactionCommit({ queryRunner }: TransactionCommitEvent): void {
    const list = this.waiting.get(queryRunner);
    if (!list) return;
    if (queryRunner.isTransactionActive) {
      // A savepoint ended without a rollback (RELEASE SAVEPOINT): its writes belong to the enclosing level now.
      const depth = depthOf(queryRunner);
      for (const item of list) item.depth = Math.min(item.depth, depth);
      return;
    }
    this.waiting.delete(queryRunner);
    for (const item of list) item.run();
  }

  afterTransactionRollback({ queryRunner }: TransactionRollbackEvent): void {
    const list = this.waiting.get(queryRunner);
    if (!list) return;
    if (!queryRunner.isTransactionActive) {
      this.waiting.delete(queryRunner);
      return;
    }
    // Rolled back to a savepoint: only what was written inside it is undone.
    const depth = depthOf(queryRunner);
    this.waiting.set(
      queryRunner,
      list.filter((item) => item.depth <= depth),
    );
  }
}
