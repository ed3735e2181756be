import { Get, Inject, Query } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { DelayAdmin } from '../index.js';
import { AdminApiController } from './admin-api.decorator.js';
import { ADMIN_OPTIONS, type AdminOptions } from './admin.options.js';
import {
  CountsView,
  InstanceView,
  StateCountView,
  toCountsView,
  toWheelView,
  WheelView,
} from './admin.views.js';
import { WheelQuery } from './dto/wheel.query.js';

/** The whole picture: counts, the instances and their leases, this instance's wheel. */
@ApiExtraModels(StateCountView)
@AdminApiController('api')
export class AdminClusterController {
  constructor(
    private readonly admin: DelayAdmin,
    @Inject(ADMIN_OPTIONS) private readonly options: AdminOptions,
  ) {}

  @Get('counts')
  @ApiOperation({
    summary: 'Tasks per state and type: bounded (ADMIN_COUNT_CAP rows per state) and cached 5 s',
  })
  @ApiOkResponse({ type: CountsView })
  async counts(): Promise<CountsView> {
    return toCountsView(await this.admin.counts({ cap: this.options.countCap }));
  }

  @Get('instances')
  @ApiOperation({ summary: 'Every instance with a lease: held tasks, lease, clock offset' })
  @ApiOkResponse({ type: [InstanceView] })
  instances(): Promise<InstanceView[]> {
    return this.admin.instances(this.options.countCap);
  }

  @Get('wheel')
  @ApiOperation({ summary: "This instance's timing wheel: slots, pointer, entries per region" })
  @ApiOkResponse({ type: WheelView })
  wheel(@Query() query: WheelQuery): WheelView {
    return toWheelView(this.admin.wheel(query.regions));
  }
}
