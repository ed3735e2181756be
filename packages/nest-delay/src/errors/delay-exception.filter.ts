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
  if (error instanceof DelayValidationError) return answer(400, error, { field: error.field });
  if (error instanceof TaskNotFoundError) return answer(404, error, error.ref);
  if (error instanceof ScheduleNotFoundError)
    return answer(404, error, { schedule: error.scheduleName });
  if (error instanceof UnknownTaskTypeError) return answer(404, error, { type: error.type });
  if (error instanceof TaskStateError) return answer(409, error, { state: error.state });
  return undefined;
}

const ANSWERS = {
  400: [BadRequestException, 'Bad Request'],
  404: [NotFoundException, 'Not Found'],
  409: [ConflictException, 'Conflict'],
} as const;

/** Nest's body for the status, with the error's message and what it names. */
function answer(statusCode: keyof typeof ANSWERS, error: Error, named: object): HttpException {
  const [Exception, name] = ANSWERS[statusCode];
  return new Exception({ statusCode, error: name, message: error.message, ...named });
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
