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
