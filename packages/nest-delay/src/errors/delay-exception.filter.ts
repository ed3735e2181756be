import {
  BadRequestException,
  Catch,
  ConflictException,
  HttpException,
  NotFoundException,
  type ArgumentsHost,
} from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import {
  DelayValidationError,
  ScheduleNotFoundError,
  TaskNotFoundError,
  TaskStateError,
  UnknownTaskTypeError,
} from './delay-errors.js';

/**
 * The package's errors as HTTP errors, each with what it names beside its
 * message: a bad input's `field` (400); an unknown task's `id` or `key`, a
 * schedule's `schedule`, a task type's `type` (404); the `state` an action
 * does not fit (409). Anything else: undefined.
 */
export function delayHttpException(error: unknown): HttpException | undefined {
  if (error instanceof DelayValidationError)
    return new BadRequestException({
      statusCode: 400,
      error: 'Bad Request',
      message: error.message,
      field: error.field,
    });
  if (error instanceof TaskNotFoundError)
    return new NotFoundException({
      statusCode: 404,
      error: 'Not Found',
      message: error.message,
      ...error.ref,
    });
  if (error instanceof ScheduleNotFoundError)
    return new NotFoundException({
      statusCode: 404,
      error: 'Not Found',
      message: error.message,
      schedule: error.scheduleName,
    });
  if (error instanceof UnknownTaskTypeError)
    return new NotFoundException({
      statusCode: 404,
      error: 'Not Found',
      message: error.message,
      type: error.type,
    });
  if (error instanceof TaskStateError)
    return new ConflictException({
      statusCode: 409,
      error: 'Conflict',
      message: error.message,
      state: error.state,
    });
  return undefined;
}

/**
 * Answers the package's errors with a 400, 404 or 409 instead of a 500
 * (see delayHttpException): `app.useGlobalFilters(new DelayExceptionFilter(app.getHttpAdapter()))`,
 * or `{ provide: APP_FILTER, useClass: DelayExceptionFilter }`.
 */
@Catch(
  DelayValidationError,
  TaskNotFoundError,
  TaskStateError,
  ScheduleNotFoundError,
  UnknownTaskTypeError,
)
export class DelayExceptionFilter extends BaseExceptionFilter {
  override catch(exception: unknown, host: ArgumentsHost): void {
    super.catch(delayHttpException(exception) ?? exception, host);
  }
}
