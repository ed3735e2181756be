import type { DataSource, QueryRunner } from 'typeorm';
import type { DelayExecutor } from '../task.types.js';

/**
 * A claim's connection: one pooled pg connection (under a TypeORM runner on a
 * DataSource) whose transaction the claim drives by hand: BEGIN goes with the
 * attempt note and COMMIT with the note's unlock, each in one message, so
 * that behind a pooler in transaction mode the note's session lock stays with
 * the claim's server session. The runner's transaction state and events are left as
 * TypeORM's own start/commitTransaction would leave them. Everything relied on
 * in TypeORM and `pg` beyond their public API is here, each assumption
 * checked by test/delay/typeorm-seam.e2e-spec.ts.
 */

/** What `pg` hands back: the rows of any statement, RETURNING included, and its command tag. */
export interface PgClient {
  query(text: string, params: unknown[] | undefined): Promise<PgResult | PgResult[]>;
  /** A named statement: parsed once on this connection, then bound and run. */
  query(config: { name: string; text: string; values: unknown[] }): Promise<PgResult>;
  escapeLiteral(value: string): string;
  end(): Promise<void>;
  on(event: 'error', listener: (error: Error) => void): void;
  listeners(event: 'error'): unknown[];
}

export interface PgResult {
  rows: unknown[];
  command: string;
}

/** A pg Pool: the engine's own, or TypeORM's postgres driver's (`driver.master`). */
export interface PgPool {
  query(text: string, params: unknown[] | undefined): Promise<PgResult>;
  connect(): Promise<PgClient & { release(destroy?: boolean): void }>;
  end(): Promise<void>;
  readonly options?: { max?: number };
  on(event: 'connect', listener: (client: PgClient) => void): void;
  /** pg-pool's own list of its connections (not public, but there since pg-pool 2). */
  _clients?: PgClient[];
}

/** TypeORM's transaction events, as QueryRunner.broadcaster names them. */
export type TransactionEvent =
  | 'BeforeTransactionStart'
  | 'AfterTransactionStart'
  | 'BeforeTransactionCommit'
  | 'AfterTransactionCommit'
  | 'BeforeTransactionRollback'
  | 'AfterTransactionRollback';

/** The fields TypeORM's own transaction methods keep (`transactionDepth` is protected). */
interface TransactionState {
  isTransactionActive: boolean;
  transactionDepth: number;
}

/** The pg pool behind a postgres DataSource. */
export function pgPoolOf(dataSource: DataSource): PgPool | undefined {
  return (dataSource.driver as unknown as { master?: PgPool }).master;
}

/** The pg client a runner runs on: `connect()` resolves to the pool's client it took. */
export async function pgClientOf(runner: QueryRunner): Promise<PgClient> {
  return (await runner.connect()) as PgClient;
}

/** How deep the runner's transaction nests: 1 for the outer one, one more per savepoint. */
export function transactionDepth(runner: QueryRunner): number {
  return (runner as unknown as TransactionState).transactionDepth;
}

/** Sets the runner's transaction state as its own start/commit/rollback would leave it. */
export function setTransactionState(runner: QueryRunner, active: boolean, depth: number): void {
  const state = runner as unknown as TransactionState;
  state.isTransactionActive = active;
  state.transactionDepth = depth;
}

/** Tells the DataSource's subscribers what TypeORM's own transaction methods would. */
export function broadcast(runner: QueryRunner, event: TransactionEvent): Promise<void> {
  return runner.broadcaster.broadcast(event);
}

/** Statements a session has prepared by SQL PREPARE in a script (see ScriptStatements). */
const PREPARED_IN_SESSION = new WeakMap<object, Set<string>>();

const SERVER_NAMES = new Map<string, { text: string; named: string }>();

/**
 * A statement's name and a hash of its text (FNV-1a): behind a pooler, a server session
 * shared with another release, whose statement of that name has another text, never runs it.
 */
export function statementName(name: string, text: string): string {
  const known = SERVER_NAMES.get(name);
  if (known?.text === text) return known.named;
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  const named = `${name}_${(hash >>> 0).toString(16).padStart(8, '0')}`;
  SERVER_NAMES.set(name, { text, named });
  return named;
}

/** Statements of a script (one message, no parameters: values quoted in). */
export interface ScriptStatements {
  /** `value` as a SQL string literal, quoted by pg. */
  literal(value: string): string;
  /**
   * `text` ($1, $2, …) with its values as SQL: EXECUTE where the session keeps it prepared (PREPARE
   * first, once a session), else the text with the values in place of its placeholders.
   */
  statement(name: string, text: string, values: string[]): string;
}

/** Ids (digits only) checked before they are quoted into a script: nothing else can reach its text. */
export function assertIds(ids: string[]): void {
  for (const id of ids) if (!/^[0-9]+$/.test(id)) throw new Error(`not an id: ${id}`);
}

/** A pooled connection for one claim transaction at a time. */
export interface ClaimConnection {
  /** TypeORM's runner on this connection (on a DataSource): handlers write through its manager. */
  readonly runner: QueryRunner | undefined;
  /** The pg client under it, for handlers that write through their own ORM (TaskContext.client). */
  readonly client: PgClient;
  /** Statements on this connection, skipping TypeORM's per-query bookkeeping on the hot path. */
  readonly sql: DelayExecutor;
  /**
   * Sends `prelude` (no parameters), BEGIN, the transaction's limits and `first` (`script`, on its
   * generic plan) in one round trip, the runner left as startTransaction would; each one's rows.
   */
  begin(prelude: string, backstopMs: number, first?: string): Promise<unknown[][]>;
  /** For statements sent in a script on this connection (begin's `first`). */
  readonly script: ScriptStatements;
  /** Rolls the transaction back and begins another, with its limits, in one round trip. */
  restart(backstopMs: number): Promise<void>;
  /**
   * Commits as commitTransaction does (its events too), then `after`, in one round trip. False
   * when a statement left the transaction aborted or a deferred check failed
   * (failedDeferredCheck): still open, for `restart`. Any other failure throws: close it.
   */
  commit(after: string): Promise<boolean>;
  /**
   * A savepoint pass's steps, a round trip each: `first` takes the first task's savepoint; `next`
   * checks the task before's deferred constraints (DEFERRED_CHECK), releases it and takes the next;
   * `last` checks and releases. A failed check leaves the savepoint aborted, for
   * rollbackToSavepoint and the same step again. `probe` (go on?) is sent last: its answer.
   */
  savepoint(step: 'first' | 'next' | 'last', probe?: string): Promise<boolean>;
  /** Undoes the current task's writes: back to its savepoint, still open. */
  rollbackToSavepoint(): Promise<void>;
  /** Destroys the connection now, its transaction rolled back as a crash would (a hung handler). */
  cutOff(): void;
  release(): Promise<void>;
}

/** SQLSTATE 25P02: a statement earlier in the transaction failed; nothing more runs but ROLLBACK. */
const IN_FAILED_TRANSACTION = '25P02';

/**
 * A failure of the deferred checks before COMMIT (SET CONSTRAINTS ALL IMMEDIATE): an integrity
 * constraint (class 23) or a PL/pgSQL constraint trigger (P0); the transaction is open, aborted.
 */
export function failedDeferredCheck(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && (code.startsWith('23') || code.startsWith('P0'));
}

/** A task's savepoint in a savepoint pass. */
const SAVEPOINT = 'delayed_task';

/**
 * Checks the deferred constraints of what the transaction wrote so far, so a
 * violation is the task's that made it, not the whole claim's at COMMIT. In a
 * savepoint rolled back at once, so the constraints go back to their modes
 * (a later handler may rely on deferral) and are checked again at COMMIT.
 * Quadratic in a batch's deferred rows, paid only in a savepoint pass.
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
 * Limits for the rest of a claim transaction (a frozen process cannot hold its locks forever). With
 * `pinPlan` the next statement runs on its generic plan, planned once a session (left to choose, a
 * session whose first claims took one task each plans every claim anew); UNPIN puts it back.
 */
function limits(backstopMs: number, pinPlan = false): string {
  const ms = `'${Math.min(2 ** 31 - 1, Math.max(1, Math.round(backstopMs)))}'`;
  const pin = `, set_config('nest_delay.plan_cache_mode', current_setting('plan_cache_mode'), true),
    set_config('plan_cache_mode', 'force_generic_plan', true)`;
  return `SELECT set_config('statement_timeout', ${ms}, true),
    set_config('idle_in_transaction_session_timeout', ${ms}, true)${pinPlan ? pin : ''}`;
}

const UNPIN = `SELECT set_config('plan_cache_mode', current_setting('nest_delay.plan_cache_mode'), true)`;

/**
 * Where a claim's connections come from, preparing statements or not: a
 * runner of the app's DataSource, or else a bare client of the engine's own pool.
 */
export interface ClaimSource {
  readonly dataSource: DataSource | undefined;
  readonly prepared: PreparedStatements;
  connect(): Promise<PgClient & { release(destroy?: boolean): void }>;
}

export async function claimConnection(database: ClaimSource): Promise<ClaimConnection> {
  const runner = database.dataSource?.createQueryRunner();
  const pooled = runner ? undefined : await database.connect();
  const client: PgClient = runner ? await pgClientOf(runner) : pooled!;
  const state = (active: boolean, depth: number) =>
    runner && setTransactionState(runner, active, depth);
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
    state(true, 1);
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
          const named = { name: statementName(name, text), text, values: params };
          return ((await client.query(named)) as PgResult).rows as T[];
        } catch (error) {
          prepared.failed(error);
          throw error;
        }
      },
    },
    async begin(prelude, backstopMs, first) {
      await tell('BeforeTransactionStart');
      const then = first ? `; ${first}; ${UNPIN}` : '';
      const results = await script(
        `${prelude ? `${prelude}; ` : ''}BEGIN; ${limits(backstopMs, !!first)}${then}`,
      );
      await begun();
      return results.slice(0, first ? -1 : undefined).map((result) => result.rows);
    },
    script: {
      literal,
      statement(base, text, values) {
        const inPlace = () => text.replace(/\$(\d+)/g, (_, n: string) => values[Number(n) - 1]);
        if (!prepared.enabled) return inPlace();
        const name = statementName(base, text);
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
      // Subscribers hear the rollback with the transaction closed, then a new start.
      state(false, 0);
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
      state(false, 0);
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
    cutOff() {
      if (released()) return;
      // Closing the client ends the server session (its transaction rolls
      // back) and fails whatever query is in flight; released while closing,
      // the pool drops it instead of handing it out again. The runner's own
      // release keeps TypeORM's own state straight (a pool-level release behind
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
