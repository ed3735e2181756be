import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { noDatabase, releasedManager } from '../delay.messages.js';
import type { DelayExecutor } from '../task.types.js';
import { ForeignTransaction, type CallerTransaction } from './caller-transaction.js';
import {
  broadcast,
  pgClientOf,
  pgPoolOf,
  setTransactionBooks,
  type PgClient,
  type PgPool,
  type PgResult,
  type TransactionEvent,
} from './typeorm-seam.js';

/**
 * Runs one parameterised statement and returns its rows: the public
 * DelayExecutor, by its engine name. A `name` asks for it prepared, where
 * the connection can (a claim's; see PreparedStatements): one name, one
 * text, always.
 */
export type Sql = DelayExecutor;

/**
 * The one place that talks to `pg` directly. The engine runs on a pg pool:
 * its own (DelayModule's `connection` option: a pool or a connection
 * string), or the one under the app's TypeORM DataSource (`driver.master`),
 * which TypeORM is then only one binding of: a caller's `{ manager }` is the
 * transaction its QueryRunner holds (`connect()` returns that very client),
 * and a claim runs on a QueryRunner, so that handlers get a manager of it.
 * pg, not TypeORM's `query()`, runs the statements: that returns `[rows,
 * count]` for an UPDATE or DELETE, and every `... RETURNING` would need to
 * know its own command tag.
 */
export class Database {
  private ended = false;

  private constructor(
    private readonly pg: PgPool,
    /** The app's TypeORM DataSource, when the engine runs on its pool. */
    readonly dataSource: DataSource | undefined,
    /** Whether the engine opened `pg` itself, and so ends it (close). */
    private readonly owned: boolean,
    /** Off unless the runtime says otherwise (the module's options). */
    readonly prepared: PreparedStatements,
  ) {}

  /** On the pool of the app's TypeORM DataSource. */
  static onDataSource(dataSource: DataSource, prepared = new PreparedStatements(false)): Database {
    return new Database(pgPoolOf(dataSource)!, dataSource, false, prepared);
  }

  /** On a pg pool of its own: `owned` when the engine opened it and must end it. */
  static onPool(pool: PgPool, owned: boolean, prepared = new PreparedStatements(false)): Database {
    return new Database(pool, undefined, owned, prepared);
  }

  /** The same connections with other prepared-statement rules (the runtime's). */
  withPrepared(prepared: PreparedStatements): Database {
    return new Database(this.pg, this.dataSource, this.owned, prepared);
  }

  /** How many connections the pool may open (pg's default 10 when it says none). */
  get poolSize(): number {
    if (this.dataSource) {
      const options = this.dataSource.options as { poolSize?: number; extra?: { max?: number } };
      return options.poolSize ?? options.extra?.max ?? 10;
    }
    return this.pg.options?.max ?? 10;
  }

  /** False once the app has closed its DataSource, or the engine its own pool. */
  get isOpen(): boolean {
    return this.dataSource ? this.dataSource.isInitialized : !this.ended;
  }

  /** Ends the pool if the engine opened it (the app's own it leaves to the app). */
  async close(): Promise<void> {
    if (!this.owned || this.ended) return;
    this.ended = true;
    await this.pg.end();
  }

  /**
   * Gives every connection of the pool an error listener of its own for its
   * whole life. pg-pool takes its listener off a connection while lending it
   * out, and a pg client with no listener turns a session the server ends
   * between two statements (pg_terminate_backend, a failover, a proxy's idle
   * timeout) into an uncaught exception that kills the process; with one, the
   * connection's next statement fails instead, and the pool drops it.
   */
  guardConnections(): void {
    const pool = this.pg;
    if (typeof pool.on !== 'function' || GUARDED.has(pool)) return;
    GUARDED.add(pool);
    pool.on('connect', guard);
    // Connections opened before this (TypeORM opens one at initialize).
    for (const client of pool._clients ?? []) guard(client);
  }

  /** Statements on a pooled connection, each its own transaction. */
  get pool(): Sql {
    const pool = this.pg;
    return {
      rows: async <T>(text: string, params: unknown[]) =>
        (await pool.query(text, params)).rows as T[],
    };
  }

  /** A connection of the pool, for a transaction driven by hand (a claim's). */
  connect(): Promise<PgClient & { release(destroy?: boolean): void }> {
    return this.pg.connect();
  }

  /**
   * `work`'s statements in one transaction of their own, committed when it
   * resolves; `manager` is TypeORM's for it when the engine runs on a DataSource.
   */
  async transaction<T>(
    work: (sql: Sql, parts: { client: PgClient; manager?: EntityManager }) => Promise<T>,
  ): Promise<T> {
    if (this.dataSource)
      return this.dataSource.transaction(async (manager) =>
        work(this.in(manager), { client: await pgClientOf(manager.queryRunner!), manager }),
      );
    const client = await this.pg.connect();
    try {
      await client.query('BEGIN', undefined);
      const result = await work(clientSql(client), { client });
      await client.query('COMMIT', undefined);
      return result;
    } catch (error) {
      await client.query('ROLLBACK', undefined).catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /** Statements in the caller's transaction when it gives one (see CallerTransaction), else on the pool. */
  in(caller: CallerTransaction | undefined): Sql {
    if (caller instanceof ForeignTransaction) return caller.sql;
    const runner = caller?.queryRunner;
    if (!runner) return this.pool;
    return {
      rows: async <T>(text: string, params: unknown[]) => {
        if (runner.isReleased) throw new Error(releasedManager());
        const client = await pgClientOf(runner);
        return ((await client.query(text, params)) as PgResult).rows as T[];
      },
    };
  }
}

/**
 * The engine's connections: a pool of its own from `connection` (a pg Pool,
 * or a connection string it opens one for and so ends), else the app's DataSource's.
 */
export async function openDatabase(
  connection: string | object | undefined,
  dataSource: DataSource | null,
): Promise<Database> {
  if (typeof connection === 'string') {
    const { default: pg } = await import('pg');
    return Database.onPool(
      new pg.Pool({ connectionString: connection }) as unknown as PgPool,
      true,
    );
  }
  if (connection) return Database.onPool(connection as PgPool, false);
  if (dataSource) return Database.onDataSource(dataSource);
  throw new Error(noDatabase());
}

/** Statements on one client. */
function clientSql(client: PgClient): Sql {
  return {
    rows: async <T>(text: string, params: unknown[]) =>
      ((await client.query(text, params)) as PgResult).rows as T[],
  };
}

const GUARDED = new WeakSet<object>();
/** Statements a session has prepared by SQL PREPARE in a script (see ScriptStatements). */
const PREPARED_IN_SESSION = new WeakMap<object, Set<string>>();

/** The server ended the session: the next statement on the connection reports it. */
function ignoreConnectionError(): void {}

function guard(client: PgClient): void {
  if (!client.listeners('error').includes(ignoreConnectionError)) {
    client.on('error', ignoreConnectionError);
  }
}

/** Statements of a script (one message, no parameters: values quoted in). */
export interface ScriptStatements {
  /** `value` as a SQL string literal, quoted by pg. */
  literal(value: string): string;
  /**
   * `text` (with $1, $2, … placeholders) as a statement of a script, given
   * its values as SQL: `EXECUTE name(values)` where the session can keep it
   * prepared (`PREPARE name AS text` first, once per session), else the
   * text with the values in place of its placeholders.
   */
  statement(name: string, text: string, values: string[]): string;
}

/** Ids (digits only) checked before they are quoted into a script: nothing else can reach its text. */
export function assertIds(ids: string[]): void {
  for (const id of ids) if (!/^[0-9]+$/.test(id)) throw new Error(`not an id: ${id}`);
}

/** A pooled connection for one claim transaction at a time. */
export interface ClaimConnection {
  /**
   * TypeORM's runner on this connection when the engine runs on a DataSource:
   * its manager is what handlers write through (TaskContext.manager).
   */
  readonly runner: QueryRunner | undefined;
  /** The pg client under it, for handlers that write through their own ORM (TaskContext.client). */
  readonly client: PgClient;
  /** Statements on this connection, skipping TypeORM's per-query bookkeeping on the hot path. */
  readonly sql: Sql;
  /**
   * Sends `prelude` (statements without parameters, their values quoted in),
   * then BEGIN and the transaction's limits, then `first` (a statement of
   * the transaction, see `script`), in one round trip, and leaves the runner
   * inside that transaction as startTransaction would. Returns the rows of
   * each statement, the prelude's first and `first`'s last.
   */
  begin(prelude: string, backstopMs: number, first?: string): Promise<unknown[][]>;
  /** For statements sent in a script on this connection (begin's `first`). */
  readonly script: ScriptStatements;
  /** Rolls the transaction back and begins another, with its limits, in one round trip. */
  restart(backstopMs: number): Promise<void>;
  /**
   * Commits, as TypeORM's commitTransaction does (its events included), then
   * runs `after` (no parameters) in the same round trip; says whether
   * Postgres committed. False when a statement left the transaction aborted,
   * or a deferred constraint failed its check (see failedDeferredCheck): then
   * it is still open, for `restart`. Any other failure throws: close the connection.
   */
  commit(after: string): Promise<boolean>;
  /**
   * The savepoints of a savepoint pass, one a task, each step one round trip:
   * `first` takes the first task's; `next` checks the deferred constraints of
   * the task before (see DEFERRED_CHECK), releases its savepoint and takes the
   * next one's; `last` checks and releases the last task's. A failed check
   * leaves the task's savepoint aborted, for rollbackToSavepoint, then the
   * same step again (without deferrable constraints the check costs only its
   * commands). `probe`, a statement whose one boolean says
   * whether to go on, is sent last in the same round trip; its answer is
   * returned (true without one).
   */
  savepoint(step: 'first' | 'next' | 'last', probe?: string): Promise<boolean>;
  /** Undoes the current task's writes: back to its savepoint, still open. */
  rollbackToSavepoint(): Promise<void>;
  /** `value` as a SQL string literal, quoted by pg. */
  literal(value: string): string;
  /**
   * Destroys the connection now, whatever it is doing: the server rolls its
   * transaction back, exactly as a crash would. For handlers that will not return.
   */
  cutOff(): void;
  release(): Promise<void>;
}

/** SQLSTATE 25P02: a statement earlier in the transaction failed; nothing more runs but ROLLBACK. */
const IN_FAILED_TRANSACTION = '25P02';

/**
 * A failure of the deferred checks run before COMMIT (SET CONSTRAINTS ALL
 * IMMEDIATE): an integrity constraint (class 23: a foreign key, unique,
 * exclusion or check) or a constraint trigger written in PL/pgSQL (class
 * P0). Raised before COMMIT runs, so the transaction is still open, aborted.
 */
export function failedDeferredCheck(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && (code.startsWith('23') || code.startsWith('P0'));
}

/** A task's savepoint in a savepoint pass. */
const SAVEPOINT = 'delayed_task';

/**
 * Checks the deferred constraints of what the transaction wrote so far, so
 * that a violation is the task's that made it, not the whole claim's at
 * COMMIT. Inside a savepoint rolled back at once: the constraints go back to
 * their modes (a later handler may still rely on deferral), and the checks
 * run again at COMMIT. So each savepoint step re-checks the rows of every task before
 * it: quadratic in a batch's deferred rows, paid only in a savepoint pass (a
 * rerun, or a limited type's claim), and only by tables with such constraints.
 */
const DEFERRED_CHECK = `SAVEPOINT ${SAVEPOINT}_check; SET CONSTRAINTS ALL IMMEDIATE;
  ROLLBACK TO SAVEPOINT ${SAVEPOINT}_check; RELEASE SAVEPOINT ${SAVEPOINT}_check`;

const SAVEPOINT_STEP = {
  first: `SAVEPOINT ${SAVEPOINT}`,
  next: `RELEASE SAVEPOINT ${SAVEPOINT}; SAVEPOINT ${SAVEPOINT}`,
  last: `RELEASE SAVEPOINT ${SAVEPOINT}`,
} as const;

/** A savepoint step's commands: the task before's deferred check first. */
function savepointScript(step: keyof typeof SAVEPOINT_STEP): string {
  return step === 'first' ? SAVEPOINT_STEP.first : `${DEFERRED_CHECK}; ${SAVEPOINT_STEP[step]}`;
}

/**
 * Postgres-side limits for the rest of a claim transaction, so that even a
 * frozen process cannot hold its locks forever. Transaction-scoped (like SET
 * LOCAL), so nothing outlives the transaction on a pooled server session.
 */
function limits(backstopMs: number): string {
  const ms = `'${Math.min(2 ** 31 - 1, Math.max(1, Math.round(backstopMs)))}'`;
  return `SELECT set_config('statement_timeout', ${ms}, true),
    set_config('idle_in_transaction_session_timeout', ${ms}, true)`;
}

export async function claimConnection(database: Database): Promise<ClaimConnection> {
  // On a DataSource, a runner of its own keeps TypeORM's books of this
  // transaction (setTransactionBooks, broadcast) for handlers' managers and
  // subscribers such as AfterCommit; on the engine's own pool, a bare client.
  const runner = database.dataSource?.createQueryRunner();
  const pooled = runner ? undefined : await database.connect();
  const client: PgClient = runner ? await pgClientOf(runner) : pooled!;
  const books = (active: boolean, depth: number) =>
    runner && setTransactionBooks(runner, active, depth);
  const tell = async (event: TransactionEvent) => {
    if (runner) await broadcast(runner, event);
  };
  let handedBack = false;
  const released = () => (runner ? runner.isReleased : handedBack);
  /** The bare client back to the pool, once; `destroy` drops it from the pool. */
  const release = (destroy: boolean) => {
    if (handedBack) return;
    handedBack = true;
    pooled?.release(destroy);
  };
  const { prepared } = database;
  const literal = (value: string) => client.escapeLiteral(value);
  const script = async (text: string): Promise<PgResult[]> => {
    let reply: PgResult | PgResult[];
    try {
      reply = await client.query(text, undefined);
    } catch (error) {
      // A script may EXECUTE what it prepared in an earlier one (ScriptStatements).
      prepared.failed(error);
      throw error;
    }
    // pg answers a script of several statements with one result each.
    return Array.isArray(reply) ? reply : [reply];
  };
  const begun = async (): Promise<void> => {
    books(true, 1);
    await tell('AfterTransactionStart');
  };
  return {
    runner,
    client,
    sql: {
      rows: async <T>(text: string, params: unknown[], name?: string) => {
        if (name === undefined || !prepared.enabled)
          return ((await client.query(text, params)) as PgResult).rows as T[];
        try {
          return ((await client.query({ name, text, values: params })) as PgResult).rows as T[];
        } catch (error) {
          prepared.failed(error);
          throw error;
        }
      },
    },
    async begin(prelude, backstopMs, first) {
      await tell('BeforeTransactionStart');
      const results = await script(
        `${prelude ? `${prelude}; ` : ''}BEGIN; ${limits(backstopMs)}${first ? `; ${first}` : ''}`,
      );
      await begun();
      return results.map((result) => result.rows);
    },
    script: {
      literal,
      statement(name, text, values) {
        const inPlace = () => text.replace(/\$(\d+)/g, (_, n: string) => values[Number(n) - 1]);
        if (!prepared.enabled) return inPlace();
        const execute = `EXECUTE ${name}(${values.join(', ')})`;
        let names = PREPARED_IN_SESSION.get(client);
        if (names?.has(name)) return execute;
        // Counted as prepared before the script runs: a script that fails
        // closes its connection (a claim's failure cuts it off), and the
        // session with it. A PREPARE outlives a ROLLBACK.
        if (!names) PREPARED_IN_SESSION.set(client, (names = new Set()));
        names.add(name);
        return `PREPARE ${name} AS ${text}; ${execute}`;
      },
    },
    async restart(backstopMs) {
      await tell('BeforeTransactionRollback');
      await script(`ROLLBACK; BEGIN; ${limits(backstopMs)}`);
      // Subscribers hear the rollback with the books closed, then a new start.
      books(false, 0);
      await tell('AfterTransactionRollback');
      await tell('BeforeTransactionStart');
      await begun();
    },
    async commit(after) {
      await tell('BeforeTransactionCommit');
      // Deferred constraints checked before COMMIT, in the same message: if
      // one fails, the transaction stays open (aborted) instead of ending,
      // so the claim's session, and its note's lock, are not handed back to
      // a pooler before the claim closes its connection.
      let replies: PgResult[];
      try {
        replies = await script(`SET CONSTRAINTS ALL IMMEDIATE; COMMIT; ${after}`);
      } catch (error) {
        // A statement a handler swallowed left the transaction aborted: not
        // committed, and left open for the caller to restart (ROLLBACK and
        // BEGIN in one message, so a pooler keeps the session with it).
        if ((error as { code?: string }).code === IN_FAILED_TRANSACTION) return false;
        // A deferred constraint failed: not committed either, and open too.
        if (failedDeferredCheck(error)) return false;
        throw error;
      }
      const reply = replies[1];
      books(false, 0);
      const committed = reply.command === 'COMMIT';
      await tell(committed ? 'AfterTransactionCommit' : 'AfterTransactionRollback');
      return committed;
    },
    async savepoint(step, probe) {
      const steps = savepointScript(step);
      const replies = await script(probe ? `${steps}; ${probe}` : steps);
      if (!probe) return true;
      const [row] = replies[replies.length - 1].rows as Array<Record<string, unknown>>;
      return row !== undefined && Object.values(row)[0] === true;
    },
    async rollbackToSavepoint() {
      await script(`ROLLBACK TO SAVEPOINT ${SAVEPOINT}`);
    },
    literal,
    cutOff() {
      if (released()) return;
      // Closing the client ends the server session (its transaction rolls
      // back) and fails whatever query is in flight; released while closing,
      // the pool drops it instead of handing it out again. The runner's own
      // release keeps TypeORM's books straight (a pool-level release behind
      // its back would leave it waiting for this runner at destroy, forever).
      client.end().catch(() => undefined);
      if (runner) void runner.release().catch(() => undefined);
      else release(true);
    },
    async release() {
      if (runner) await runner.release().catch(() => undefined);
      else release(false);
    },
  };
}

/**
 * Whether statements that carry a name go to Postgres prepared (parsed and
 * planned once per server session, then only bound and run). A pooler in
 * transaction mode hands each transaction any server session: one that
 * does not carry prepared statements answers with SQLSTATE 26000 (no such
 * prepared statement: prepared on another session) or 42P05 (already
 * exists: prepared there by another client). The first such answer turns
 * preparing off for good and is reported once; the statement that met it
 * fails, and its caller retries at once (see isPoolerAnswer).
 */
export class PreparedStatements {
  private off: string | null;

  constructor(
    enabled: boolean,
    private readonly report: (why: string) => void = () => undefined,
  ) {
    this.off = enabled ? null : 'turned off';
  }

  get enabled(): boolean {
    return this.off === null;
  }

  /** Looks at a failed prepared statement's error: a pooler's, and preparing stops. */
  failed(error: unknown): void {
    if (this.off !== null || !isPoolerAnswer(error)) return;
    const { code } = error as { code: string };
    this.off = `Postgres answered ${code}`;
    this.report(
      `Postgres answered a prepared statement with ${code} (${(error as Error).message}): ` +
        'a pooler in transaction mode moves sessions between transactions. Statements are sent ' +
        'unprepared from now on; set DelayModule option preparedStatements: false to start that way',
    );
  }
}

/**
 * A prepared statement's failure that only says the session was not the one
 * it was prepared on: nothing ran, and the same statement sent unprepared
 * will do.
 */
export function isPoolerAnswer(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '26000' || code === '42P05';
}
