import { Body, Get, Headers, HttpCode, HttpStatus, Param, Post } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam } from '@nestjs/swagger';
import {
  DelayAdmin,
  DelayService,
  type EntityActionResult,
  type EntityMoveRequest,
  type EntityTimeline,
} from '../index.js';
import { AdminActionLog } from './admin-actions.log.js';
import { AdminApiController } from './admin-api.decorator.js';
import { REQUEST_ID_HEADER } from './admin-request.middleware.js';
import { EntityActionView, TimelineView } from './admin.views.js';
import { CancelEntityDto, RescheduleEntityDto } from './dto/entity-action.dto.js';
import { EntityPipe } from './dto/entity.pipe.js';

/**
 * One entity (`order:42`): its timeline, and every pending task of it at
 * once: cancel them, or move them. Through DelayService, so the wheels follow; logged with the request
 * id. No pending task is an empty result, not a 404: an entity is a name the
 * tasks carry, not a row of its own.
 */
@AdminApiController('api/entities', { badRequest: true })
export class AdminEntitiesController {
  private readonly log = new AdminActionLog();

  constructor(
    private readonly delay: DelayService,
    private readonly admin: DelayAdmin,
  ) {}

  @Get(':entity/timeline')
  @ApiOperation({
    summary:
      'Everything about one entity: every task it had and has, each step in time order, and what is still due',
  })
  @ApiParam({ name: 'entity', example: 'order:42' })
  @ApiOkResponse({ type: TimelineView })
  timeline(@Param('entity', EntityPipe) entity: string): Promise<EntityTimeline> {
    return this.admin.timeline(entity);
  }

  @Post(':entity/cancel')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({ summary: "Cancels the entity's pending tasks (of the given types)" })
  @ApiParam({ name: 'entity', example: 'order:42' })
  @ApiOkResponse({ type: EntityActionView })
  cancel(
    @Param('entity', EntityPipe) entity: string,
    @Body() body: CancelEntityDto,
    @Headers(REQUEST_ID_HEADER) requestId: string,
  ): Promise<EntityActionResult> {
    return this.act(requestId, `cancel the tasks of ${entity}`, body, () =>
      this.delay.cancelEntity(entity, { types: body.types }),
    );
  }

  @Post(':entity/reschedule')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({
    summary:
      "Moves the entity's pending tasks (of the given types): each later by `by`, or all to `to`",
  })
  @ApiParam({ name: 'entity', example: 'order:42' })
  @ApiOkResponse({ type: EntityActionView })
  reschedule(
    @Param('entity', EntityPipe) entity: string,
    @Body() body: RescheduleEntityDto,
    @Headers(REQUEST_ID_HEADER) requestId: string,
  ): Promise<EntityActionResult> {
    // DelayService checks that exactly one is given, and names the field otherwise.
    const move = { by: body.by, to: body.to } as EntityMoveRequest;
    return this.act(requestId, `reschedule the tasks of ${entity}`, body, () =>
      this.delay.rescheduleEntity(entity, move, { types: body.types }),
    );
  }

  private act(
    requestId: string,
    action: string,
    body: object,
    run: () => Promise<EntityActionResult>,
  ): Promise<EntityActionResult> {
    return this.log.record(
      requestId,
      `${action} (${JSON.stringify(body)})`,
      (result) => `${result.ids.length} task(s): ${JSON.stringify(result.byType)}`,
      run,
    );
  }
}
