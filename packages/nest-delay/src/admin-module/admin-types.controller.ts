import {
  BadRequestException,
  Body,
  Delete,
  Get,
  Headers,
  HttpCode,
  HttpStatus,
  Param,
  Post,
  Put,
} from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
} from '@nestjs/swagger';
import {
  DelayLimits,
  DelayValidationError,
  type LimitChange,
  type TypeLimitInfo,
} from '../index.js';
import { NoBodyPipe } from './dto/no-body.pipe.js';
import { AdminActionLog } from './admin-actions.log.js';
import { AdminApiController } from './admin-api.decorator.js';
import { REQUEST_ID_HEADER } from './admin-request.middleware.js';
import { emptyLimitChange } from './admin.messages.js';
import { SetTypeLimitDto } from './dto/set-type-limit.dto.js';
import { TaskTypePipe } from './dto/task-type.pipe.js';
import { toTypeLimitView, TypeLimitView } from './type-limit.views.js';
import { TypeLimitsReader } from './type-limits.reader.js';

/**
 * Task types and their shared limits: list them with what waits behind
 * each, pause and resume a type everywhere, set limits in place of the
 * declared ones or go back to those. Every change goes through DelayLimits
 * (one row of `delay_type_limit`, read by every instance's claims) and is
 * logged with the request id; an unknown type is a 404 naming it, bad input
 * a 400 naming the field, and neither changes anything.
 */
@AdminApiController('api/types')
export class AdminTypesController {
  private readonly log = new AdminActionLog();

  constructor(
    private readonly limits: DelayLimits,
    private readonly reader: TypeLimitsReader,
  ) {}

  @Get()
  @ApiOperation({
    summary:
      'Every task type (a handler here, or anything set at run time): limits declared, set and in force, paused, tasks waiting',
  })
  @ApiOkResponse({ type: [TypeLimitView] })
  async list(): Promise<TypeLimitView[]> {
    return (await this.limits.list()).map(toTypeLimitView);
  }

  @Post(':type/pause')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({
    summary:
      'No task of the type starts on any instance until resumed; running ones finish, due times stay',
  })
  @ApiOkResponse({ type: TypeLimitView })
  @ApiBadRequestResponse({ description: 'Not a task type, or a body given' })
  @ApiNotFoundResponse({ description: 'No such task type; the body names it' })
  pause(
    @Param('type', TaskTypePipe) type: string,
    @Body(NoBodyPipe) _body: undefined,
    @Headers(REQUEST_ID_HEADER) requestId: string,
  ): Promise<TypeLimitView> {
    return this.act(requestId, `pause type ${JSON.stringify(type)}`, () => this.limits.pause(type));
  }

  @Post(':type/resume')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({ summary: 'Its tasks start again, in due order, each once' })
  @ApiOkResponse({ type: TypeLimitView })
  @ApiBadRequestResponse({ description: 'Not a task type, or a body given' })
  @ApiNotFoundResponse({ description: 'No such task type; the body names it' })
  resume(
    @Param('type', TaskTypePipe) type: string,
    @Body(NoBodyPipe) _body: undefined,
    @Headers(REQUEST_ID_HEADER) requestId: string,
  ): Promise<TypeLimitView> {
    return this.act(requestId, `resume type ${JSON.stringify(type)}`, () =>
      this.limits.resume(type),
    );
  }

  @Put(':type/limit')
  @ApiOperation({
    summary:
      'Sets limits in place of the declared ones, on every instance: a field given replaces the one in force, null removes it',
  })
  @ApiOkResponse({ type: TypeLimitView })
  @ApiBadRequestResponse({
    description: 'A limit out of range or malformed; the body names the field',
  })
  @ApiNotFoundResponse({ description: 'No such task type; the body names it' })
  setLimit(
    @Param('type', TaskTypePipe) type: string,
    @Body() body: SetTypeLimitDto,
    @Headers(REQUEST_ID_HEADER) requestId: string,
  ): Promise<TypeLimitView> {
    const change: LimitChange = {};
    if (body.concurrency !== undefined) change.concurrency = body.concurrency;
    if (body.rate !== undefined)
      change.rate = body.rate === null ? null : { starts: body.rate.starts, per: body.rate.per };
    if (Object.keys(change).length === 0) {
      throw new BadRequestException({
        statusCode: 400,
        error: 'Bad Request',
        message: emptyLimitChange,
      });
    }
    return this.act(
      requestId,
      `set limit of type ${JSON.stringify(type)} to ${JSON.stringify(change)}`,
      () =>
        this.limits.set(type, change).catch((error: unknown) => {
          throw asBodyError(error);
        }),
    );
  }

  @Delete(':type/limit')
  @ApiOperation({
    summary: 'Back to the limits its handler declares, on every instance; a pause stays',
  })
  @ApiOkResponse({ type: TypeLimitView })
  @ApiBadRequestResponse({ description: 'Not a task type, or a body given' })
  @ApiNotFoundResponse({ description: 'No such task type; the body names it' })
  resetLimit(
    @Param('type', TaskTypePipe) type: string,
    @Body(NoBodyPipe) _body: undefined,
    @Headers(REQUEST_ID_HEADER) requestId: string,
  ): Promise<TypeLimitView> {
    return this.act(requestId, `reset limit of type ${JSON.stringify(type)}`, () =>
      this.limits.reset(type),
    );
  }

  private async act(
    requestId: string,
    action: string,
    run: () => Promise<TypeLimitInfo>,
  ): Promise<TypeLimitView> {
    try {
      return toTypeLimitView(await this.log.record(requestId, action, describe, run));
    } finally {
      // The live stream shows the change in its next snapshot, not one read later.
      this.reader.forget();
    }
  }
}

/** What a type is left at, for the action's log line. */
function describe(info: TypeLimitInfo): string {
  const limit = info.effective;
  const parts = [
    info.paused ? 'paused' : 'running',
    limit === null
      ? 'unlimited'
      : [
          limit.concurrency === null ? null : `concurrency ${limit.concurrency}`,
          limit.rate === null ? null : `rate ${limit.rate.starts} per ${limit.rate.perMs} ms`,
        ]
          .filter(Boolean)
          .join(', '),
    info.override === null ? 'as declared' : 'set at run time',
    `${info.waiting} waiting`,
  ];
  return `now ${parts.join(', ')}`;
}

/**
 * The engine names the fields of a limit from `limit` (`limit.rate.per`);
 * this body is the limit itself, so the field is named as sent (`rate.per`).
 */
function asBodyError(error: unknown): unknown {
  if (!(error instanceof DelayValidationError) || !error.field.startsWith('limit.')) return error;
  const field = error.field.slice('limit.'.length);
  return new DelayValidationError(field, error.message.slice(error.field.length + 1));
}
