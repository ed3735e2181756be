import {
  BadRequestException,
  Catch,
  HttpException,
  Logger,
  ServiceUnavailableException,
  type ArgumentsHost,
} from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { sqlState } from '../database/postgres-errors.js';
import { delayHttpException } from 'nest-delay';

const RETRY_AFTER_SECONDS = '1';
const CONNECTION_ERROR_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE']);

/**
 * The last line: HttpExceptions (and what Nest maps to them: malformed JSON,
 * a body too large) go out as Nest writes them. Anything else is logged and
 * mapped by cause: a busy or unreachable database is a 503 to retry, a value
 * the database refused is a 400 (validation should have caught it: a bug we
 * log), and only an error nobody knows stays a 500.
 */
@Catch()
export class AllExceptionsFilter extends BaseExceptionFilter {
  private readonly logger = new Logger('AllExceptionsFilter');

  override catch(exception: unknown, host: ArgumentsHost): void {
    if (exception instanceof HttpException) return super.catch(exception, host);
    const mapped = mapUnknownError(exception);
    if (!mapped) return super.catch(exception, host);
    this.logger.error(`Mapped to ${mapped.getStatus()}: ${describe(exception)}`);
    if (mapped instanceof ServiceUnavailableException && host.getType() === 'http') {
      const response = host
        .switchToHttp()
        .getResponse<{ setHeader(name: string, value: string): void }>();
      response.setHeader('Retry-After', RETRY_AFTER_SECONDS);
    }
    super.catch(mapped, host);
  }
}

export function mapUnknownError(error: unknown): HttpException | undefined {
  // The delay package's own errors: 400, 404 or 409, with what they name.
  const delay = delayHttpException(error);
  if (delay) return delay;
  const state = sqlState(error);
  if (state !== undefined) {
    // 40: serialization failure, deadlock; 55P03: lock not available; 57014: statement timeout.
    if (state.startsWith('40') || state === '55P03' || state === '57014') {
      return new ServiceUnavailableException('The database was busy; try again');
    }
    // 08: connection exceptions; 53: out of resources; 57P0x: the server is shutting down or starting.
    if (state.startsWith('08') || state.startsWith('53') || state.startsWith('57P')) {
      return new ServiceUnavailableException('The database is unavailable; try again');
    }
    // 22: data exception; 23: integrity constraint violation.
    if (state.startsWith('22') || state.startsWith('23')) {
      return new BadRequestException('The request has a value the database cannot store');
    }
    return undefined;
  }
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && CONNECTION_ERROR_CODES.has(code)) {
    return new ServiceUnavailableException('The database is unavailable; try again');
  }
  if (
    error instanceof Error &&
    /Connection terminated|timeout exceeded when trying to connect/i.test(error.message)
  ) {
    return new ServiceUnavailableException('The database is unavailable; try again');
  }
  return undefined;
}

function describe(error: unknown): string {
  return error instanceof Error
    ? (error.stack ?? `${error.name}: ${error.message}`)
    : String(error);
}
