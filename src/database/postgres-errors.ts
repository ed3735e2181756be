/** Postgres errors by SQLSTATE, as `pg` reports them (TypeORM's QueryFailedError copies `code`). */
export function sqlState(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, driverError } = error as { code?: unknown; driverError?: { code?: unknown } };
  const state = typeof driverError?.code === 'string' ? driverError.code : code;
  return typeof state === 'string' && /^[0-9A-Z]{5}$/.test(state) ? state : undefined;
}

/** A serialization failure or a deadlock: the transaction was rolled back and may simply be run again. */
export function isTransientConflict(error: unknown): boolean {
  const state = sqlState(error);
  return state === '40001' || state === '40P01';
}
