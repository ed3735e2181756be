import {
  Inject,
  Injectable,
  NotFoundException,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { delayHttpException, UnknownTaskTypeError } from '../index.js';
import { catchError, type Observable } from 'rxjs';
import { unknownTaskType } from './admin.messages.js';
import { ADMIN_OPTIONS, type AdminOptions } from './admin.options.js';

/**
 * The package's errors as HTTP errors, each carrying what it names besides
 * its message, for a page to point at: a bad input's `field` (400), an
 * unknown task's `id`, schedule's `schedule` or task type's `type` (404),
 * the `state` that does not fit an action (409).
 * The app's exception filter, if any, then writes them.
 */
@Injectable()
export class AdminErrorsInterceptor implements NestInterceptor {
  constructor(@Inject(ADMIN_OPTIONS) private readonly options: AdminOptions) {}

  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      catchError((error: unknown) => {
        throw toHttpError(error, this.options.path);
      }),
    );
  }
}

/** `path`: where the module is mounted, for a message that points at its routes. */
function toHttpError(error: unknown, path: string): unknown {
  if (error instanceof UnknownTaskTypeError) {
    // The engine's own message speaks to a producer (register a handler); this one to an operator.
    return new NotFoundException({
      statusCode: 404,
      error: 'Not Found',
      message: unknownTaskType(error.type, path),
      type: error.type,
    });
  }
  return delayHttpException(error) ?? error;
}
