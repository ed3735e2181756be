import {
  Injectable,
  ServiceUnavailableException,
  UnauthorizedException,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import * as messages from './auth.messages.js';
import { CALLER, type Caller, type RequestWithCaller } from './caller.js';
import { InvalidTokenError, KeysUnavailableError, TokenVerifier } from './token-verifier.js';

/** The longest token read: an identity provider's are well under 2 KB; past this, nothing is parsed. */
export const MAX_TOKEN_LENGTH = 8_192;
const BEARER = /^Bearer +(\S+) *$/i;
/** AUTH_DISABLED=true: no token; the caller is trusted like an admin (docs/orders-api.md). */
const UNAUTHENTICATED_CALLER: Caller = Object.freeze({ userId: null, admin: true });

/**
 * `Authorization: Bearer <JWT>` on every orders route. A request without a
 * valid token is a 401 with `WWW-Authenticate: Bearer` (RFC 6750: with
 * `error="invalid_token"` when one was sent) and a message saying what was
 * wrong; the identity provider's keys out of reach is a 503 to retry. The
 * Caller it finds is set on the request for `@CurrentCaller()`.
 */
@Injectable()
export class UserAuthGuard implements CanActivate {
  constructor(private readonly verifier: TokenVerifier) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<Request & RequestWithCaller>();
    const response = http.getResponse<Response>();
    if (this.verifier.disabled) {
      request[CALLER] = UNAUTHENTICATED_CALLER;
      return true;
    }
    const header = request.headers.authorization;
    if (header === undefined || header.trim() === '') {
      response.setHeader('WWW-Authenticate', 'Bearer realm="orders"');
      throw new UnauthorizedException(messages.tokenRequired);
    }
    try {
      request[CALLER] = await this.verifier.verify(bearerToken(header));
      return true;
    } catch (error) {
      if (error instanceof KeysUnavailableError) {
        response.setHeader('Retry-After', '5');
        throw new ServiceUnavailableException(error.message);
      }
      if (!(error instanceof InvalidTokenError)) throw error;
      // error_description is a quoted string: its own quotes would end it.
      const description = error.message.replace(/["\\]/g, "'");
      response.setHeader(
        'WWW-Authenticate',
        `Bearer realm="orders", error="invalid_token", error_description="${description}"`,
      );
      throw new UnauthorizedException(error.message);
    }
  }
}

function bearerToken(header: string): string {
  const match = BEARER.exec(header);
  if (!match) throw new InvalidTokenError(messages.malformedAuthorization);
  const token = match[1];
  if (token.length > MAX_TOKEN_LENGTH)
    throw new InvalidTokenError(messages.tokenTooLong(token.length, MAX_TOKEN_LENGTH));
  return token;
}
