import { BadRequestException, ForbiddenException } from '@nestjs/common';
import * as messages from '../auth/auth.messages.js';
import type { Caller } from '../auth/caller.js';
import { EVERY_ORDER, userScope, type OrderScope } from './order-scope.js';

/** An admin (or, with AUTH_DISABLED, anyone) sees every order; a user their own. */
export function scopeOf(caller: Caller): OrderScope {
  return caller.admin || caller.userId === null ? EVERY_ORDER : userScope(caller.userId);
}

/**
 * Whose order a `POST /orders` creates: the token's user; a body `userId`
 * only repeats it, unless the caller is an admin, who creates orders for
 * anyone. Another user's id is a 403. Without tokens (AUTH_DISABLED) the
 * body must name the user.
 */
export function ownerOfNewOrder(caller: Caller, bodyUserId: string | undefined): string {
  if (bodyUserId === undefined) {
    if (caller.userId === null) throw new BadRequestException(messages.userIdRequired);
    return caller.userId;
  }
  if (!caller.admin && bodyUserId !== caller.userId)
    throw new ForbiddenException(messages.bodyUserIdForbidden(bodyUserId));
  return bodyUserId;
}

/** `GET /orders?userId=`: a user may name only themselves; an admin anyone. */
export function checkListedUser(caller: Caller, userId: string | undefined): void {
  if (userId !== undefined && !caller.admin && userId !== caller.userId)
    throw new ForbiddenException(messages.queryUserIdForbidden(userId));
}

/**
 * Whose Idempotency-Key this is: the caller's, who retries the request. With
 * AUTH_DISABLED nobody is known, and the order's user stands in.
 */
export function idempotencyKeyOwner(caller: Caller, orderUserId: string): string {
  return caller.userId ?? orderUserId;
}
