import {
  HttpException,
  HttpStatus,
  Inject,
  Injectable,
  UnauthorizedException,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import { ADMIN_OPTIONS, type AdminOptions } from './admin.options.js';
import { adminTokenRequired, tooManyFailures } from './admin.messages.js';
import { FailureThrottle } from './failure-throttle.js';

const BEARER = /^Bearer +(\S+) *$/i;

/**
 * `Authorization: Bearer <token>` on every admin API route, when the module
 * has a token (else it lets everything through: the app's guard decides).
 * The token is compared as SHA-256 digests with timingSafeEqual: equal
 * lengths whatever was sent, and no early exit that would time how much of
 * it matched. The right token is never refused: a client that failed too
 * often gets 429 for a wrong one only, so nobody can lock an operator out
 * (behind a proxy, where every client shares one address unless Express's
 * `trust proxy` is set). The token's length, checked at boot, is what
 * resists guessing.
 */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  private readonly expected: Buffer | undefined;

  constructor(
    @Inject(ADMIN_OPTIONS) options: AdminOptions,
    private readonly throttle: FailureThrottle,
  ) {
    this.expected = options.token === undefined ? undefined : digest(options.token);
  }

  canActivate(context: ExecutionContext): boolean {
    if (!this.expected) return true;
    const http = context.switchToHttp();
    const request = http.getRequest<Request>();
    const response = http.getResponse<Response>();
    // The socket's address unless the app is told to trust a proxy (Express `trust proxy`).
    const client = request.ip ?? request.socket.remoteAddress ?? 'unknown';
    const match = BEARER.exec(request.headers.authorization ?? '');
    if (match && timingSafeEqual(digest(match[1]), this.expected)) return true;
    const waitMs = this.throttle.waitFor(client);
    if (waitMs > 0) {
      const seconds = Math.max(1, Math.ceil(waitMs / 1000));
      response.setHeader('Retry-After', String(seconds));
      throw new HttpException(tooManyFailures(seconds), HttpStatus.TOO_MANY_REQUESTS);
    }
    this.throttle.fail(client);
    response.setHeader('WWW-Authenticate', 'Bearer realm="admin"');
    throw new UnauthorizedException(adminTokenRequired);
  }
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}
