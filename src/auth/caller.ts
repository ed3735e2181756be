import { createParamDecorator, type ExecutionContext } from '@nestjs/common';

/**
 * Who sent a request to the orders API: the token's `sub`, and whether its
 * `roles` claim holds `admin`. `userId` is null only with AUTH_DISABLED=true,
 * where there is no token: the caller is then trusted like an admin.
 */
export interface Caller {
  userId: string | null;
  admin: boolean;
}

/** The property UserAuthGuard sets on the request it lets through. */
export const CALLER = Symbol('caller');

export type RequestWithCaller = { [CALLER]?: Caller };

/** The Caller of this request (`@CurrentCaller() caller: Caller`), set by UserAuthGuard. */
export const CurrentCaller = createParamDecorator((_: unknown, context: ExecutionContext) => {
  const caller = context.switchToHttp().getRequest<RequestWithCaller>()[CALLER];
  // Only a route without UserAuthGuard gets here without one: a wiring bug, never the client's.
  if (!caller) throw new Error('CurrentCaller used on a route without UserAuthGuard');
  return caller;
});
