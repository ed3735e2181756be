/** A task is pending (will still run) while none of these is set. */
export const PENDING = `executed_at IS NULL AND cancelled_at IS NULL AND dead_at IS NULL`;

/** The same test for a table aliased in the statement. */
export function pendingIn(alias: string): string {
  return `${alias}.executed_at IS NULL AND ${alias}.cancelled_at IS NULL AND ${alias}.dead_at IS NULL`;
}
