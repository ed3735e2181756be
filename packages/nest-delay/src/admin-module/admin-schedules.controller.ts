import { Body, Get, Headers, HttpCode, HttpStatus, Param, Post } from '@nestjs/common';
import { ApiNotFoundResponse, ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { DelaySchedules, type ScheduleInfo } from '../index.js';
import { AdminActionLog } from './admin-actions.log.js';
import { AdminApiController } from './admin-api.decorator.js';
import { REQUEST_ID_HEADER } from './admin-request.middleware.js';
import { NoBodyPipe } from './dto/no-body.pipe.js';
import { ScheduleView, toScheduleView } from './schedule.views.js';

/** Recurring schedules: each one's rule, next and last occurrence; pause and resume. */
@AdminApiController('api/schedules')
export class AdminSchedulesController {
  private readonly log = new AdminActionLog();

  constructor(private readonly schedules: DelaySchedules) {}

  @Get()
  @ApiOperation({ summary: 'Every schedule by name: rule, next and last occurrence, missed' })
  @ApiOkResponse({ type: [ScheduleView] })
  async list(): Promise<ScheduleView[]> {
    return (await this.schedules.list()).map(toScheduleView);
  }

  @Post(':name/pause')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({
    summary: 'Stops planning it everywhere; occurrences planned ahead are withdrawn',
  })
  @ApiOkResponse({ type: ScheduleView })
  @ApiNotFoundResponse({ description: 'No schedule with this name; the body names it' })
  pause(
    @Param('name') name: string,
    @Body(NoBodyPipe) _body: undefined,
    @Headers(REQUEST_ID_HEADER) requestId: string,
  ): Promise<ScheduleView> {
    return this.act(requestId, 'pause', name, () => this.schedules.pause(name));
  }

  @Post(':name/resume')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({
    summary: 'Plans it again; what it missed while paused follows its catch-up policy',
  })
  @ApiOkResponse({ type: ScheduleView })
  @ApiNotFoundResponse({ description: 'No schedule with this name; the body names it' })
  resume(
    @Param('name') name: string,
    @Body(NoBodyPipe) _body: undefined,
    @Headers(REQUEST_ID_HEADER) requestId: string,
  ): Promise<ScheduleView> {
    return this.act(requestId, 'resume', name, () => this.schedules.resume(name));
  }

  private async act(
    requestId: string,
    action: string,
    name: string,
    run: () => Promise<ScheduleInfo>,
  ): Promise<ScheduleView> {
    const info = await this.log.record(
      requestId,
      `${action} schedule ${JSON.stringify(name)}`,
      (schedule) =>
        `now ${schedule.paused ? 'paused' : `next at ${schedule.upcomingAt?.toISOString() ?? 'never'}`}`,
      run,
    );
    return toScheduleView(info);
  }
}
