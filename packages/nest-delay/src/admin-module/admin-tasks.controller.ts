import {
  Body,
  Get,
  Headers,
  HttpCode,
  HttpStatus,
  NotFoundException,
  Param,
  Post,
  Query,
} from '@nestjs/common';
import {
  ApiConflictResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
} from '@nestjs/swagger';
import { DelayAdmin, DelayService, type DelayedTask, type RunAt } from '../index.js';
import { NoBodyPipe } from './dto/no-body.pipe.js';
import { AdminActionLog } from './admin-actions.log.js';
import { AdminApiController } from './admin-api.decorator.js';
import { REQUEST_ID_HEADER } from './admin-request.middleware.js';
import { taskIdNotFound } from './admin.messages.js';
import { RetryDeadView, TaskDetailsView, TaskPageView, TaskView } from './admin.views.js';
import { ListTasksQuery } from './dto/list-tasks.query.js';
import { RescheduleTaskDto } from './dto/reschedule-task.dto.js';
import { RetryDeadDto } from './dto/retry-dead.dto.js';
import { toTaskFilter } from './dto/task-filter.fields.js';
import { TaskIdPipe } from './dto/task-id.pipe.js';

/**
 * Delayed tasks for an operator: list, look at one, act on one, retry the
 * dead in bulk. Every action goes through DelayService (the wheels and leases
 * stay right) and is logged with the request id; an action that does not fit
 * the task's state is a 409 naming the state, and changes nothing.
 */
@AdminApiController('api/tasks', { badRequest: true })
export class AdminTasksController {
  private readonly log = new AdminActionLog();

  constructor(
    private readonly admin: DelayAdmin,
    private readonly delay: DelayService,
  ) {}

  @Get()
  @ApiOperation({ summary: 'Tasks matching the filters, in due order, a page at a time' })
  @ApiOkResponse({ type: TaskPageView })
  list(@Query() query: ListTasksQuery): Promise<TaskPageView> {
    const { state, limit, cursor, ...fields } = query;
    return this.admin.list({ ...toTaskFilter(fields), state }, { limit, cursor });
  }

  @Post('retry-dead')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({ summary: 'Retries up to limit dead-lettered tasks matching the filters' })
  @ApiOkResponse({ type: RetryDeadView })
  retryDead(
    @Body() body: RetryDeadDto,
    @Headers(REQUEST_ID_HEADER) requestId: string,
  ): Promise<RetryDeadView> {
    const { limit, ...fields } = body;
    return this.log.record(
      requestId,
      `retry dead tasks matching ${JSON.stringify(fields)} (limit ${limit})`,
      (r) =>
        `${r.retried.length} retried${r.skipped ? `, ${r.skipped} skipped` : ''}${r.more ? ', more left' : ''}`,
      // The route keeps its name; the package calls this a revive (see its glossary).
      async () => {
        const { revived, ...rest } = await this.admin.reviveDead(toTaskFilter(fields), limit);
        return { retried: revived, ...rest };
      },
    );
  }

  @Get(':id')
  @ApiOperation({ summary: 'One task: payload, attempts, last error, and the instance holding it' })
  @ApiOkResponse({ type: TaskDetailsView })
  @ApiNotFoundResponse({ description: 'No task with this id' })
  async details(@Param('id', TaskIdPipe) id: string): Promise<TaskDetailsView> {
    const details = await this.admin.details({ id });
    if (!details)
      throw new NotFoundException({
        statusCode: 404,
        error: 'Not Found',
        message: taskIdNotFound(id),
        id,
      });
    return details;
  }

  @Post(':id/cancel')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({ summary: 'Cancels a pending task' })
  @ApiOkResponse({ type: TaskView })
  @ApiNotFoundResponse({ description: 'No task with this id' })
  @ApiConflictResponse({ description: 'The task is not pending; the body names its state' })
  cancel(
    @Param('id', TaskIdPipe) id: string,
    @Body(NoBodyPipe) _body: undefined,
    @Headers(REQUEST_ID_HEADER) requestId: string,
  ): Promise<DelayedTask> {
    return this.act(requestId, 'cancel', id, () => this.delay.cancel({ id }));
  }

  @Post(':id/retry')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({
    summary: 'Puts a dead-lettered task back to pending, due now, with fresh attempts',
  })
  @ApiOkResponse({ type: TaskView })
  @ApiNotFoundResponse({ description: 'No task with this id' })
  @ApiConflictResponse({ description: 'The task is not dead-lettered; the body names its state' })
  retry(
    @Param('id', TaskIdPipe) id: string,
    @Body(NoBodyPipe) _body: undefined,
    @Headers(REQUEST_ID_HEADER) requestId: string,
  ): Promise<DelayedTask> {
    return this.act(requestId, 'retry', id, () => this.delay.revive({ id }));
  }

  @Post(':id/run-now')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({ summary: "Makes a pending task due now: this instance's wheel fires it at once" })
  @ApiOkResponse({ type: TaskView })
  @ApiNotFoundResponse({ description: 'No task with this id' })
  @ApiConflictResponse({ description: 'The task is not pending; the body names its state' })
  runNow(
    @Param('id', TaskIdPipe) id: string,
    @Body(NoBodyPipe) _body: undefined,
    @Headers(REQUEST_ID_HEADER) requestId: string,
  ): Promise<DelayedTask> {
    return this.act(requestId, 'run now', id, () => this.admin.runNow({ id }));
  }

  @Post(':id/reschedule')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({ summary: 'Moves a pending task to runAt, or to delay from now' })
  @ApiOkResponse({ type: TaskView })
  @ApiNotFoundResponse({ description: 'No task with this id' })
  @ApiConflictResponse({ description: 'The task is not pending; the body names its state' })
  reschedule(
    @Param('id', TaskIdPipe) id: string,
    @Body() body: RescheduleTaskDto,
    @Headers(REQUEST_ID_HEADER) requestId: string,
  ): Promise<DelayedTask> {
    // DelayService checks that exactly one is given, and names the field otherwise.
    const when = { runAt: body.runAt, delay: body.delay } as RunAt;
    return this.act(requestId, `reschedule (${JSON.stringify(body)})`, id, () =>
      this.delay.reschedule({ id }, when),
    );
  }

  private act(
    requestId: string,
    action: string,
    id: string,
    run: () => Promise<DelayedTask>,
  ): Promise<DelayedTask> {
    return this.log.record(
      requestId,
      `${action} task ${id}`,
      (task) => `now ${task.state}, due ${task.dueAt.toISOString()}`,
      run,
    );
  }
}
