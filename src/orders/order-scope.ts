/**
 * The orders a request may see and act on: one user's own (the token's
 * `sub`), or every order (a token with the `admin` role, or AUTH_DISABLED).
 * Outside its scope an order does not exist: a 404, as for an unknown id.
 */
export type OrderScope = { kind: 'user'; userId: string } | { kind: 'all' };

export const EVERY_ORDER: OrderScope = Object.freeze({ kind: 'all' });

export const userScope = (userId: string): OrderScope => ({ kind: 'user', userId });

export function inScope(order: { userId: string }, scope: OrderScope): boolean {
  return scope.kind === 'all' || order.userId === scope.userId;
}
