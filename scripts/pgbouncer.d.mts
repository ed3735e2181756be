// Types of scripts/pgbouncer.mjs, for the tests that import it.

export function findPgbouncer(): { bin?: string; missing?: string };

export interface PrivatePgbouncer {
  /** The server's URL with PgBouncer's host and port. */
  url: string;
  port: number;
  /** What PgBouncer logged so far. */
  output(): string;
  stop(): Promise<void>;
}

export function startPgbouncer(options: {
  serverUrl: string;
  poolMode?: 'session' | 'transaction' | 'statement';
  poolSize?: number;
}): Promise<PrivatePgbouncer>;
