import { Controller, Get } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { DelayRuntimeIndicator } from './delay-runtime.indicator.js';
import { MigrationsIndicator } from './migrations.indicator.js';

/** How long the database may take to answer a probe's ping. */
const PING_TIMEOUT_MS = 1_500;

/**
 * Probes. Liveness: the process answers (restart it if not). Readiness: the
 * database answers, its migrations are applied and the delay runtime runs
 * with a live lease (send it no traffic if not); a 503 names each failing part.
 */
@ApiTags('health')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly migrations: MigrationsIndicator,
    private readonly delay: DelayRuntimeIndicator,
  ) {}

  @Get('live')
  @HealthCheck()
  @ApiOperation({ summary: 'Liveness: the process answers' })
  live() {
    return this.health.check([]);
  }

  @Get('ready')
  @HealthCheck()
  @ApiOperation({ summary: 'Readiness: database, migrations, delay runtime and its lease' })
  @ApiResponse({
    status: 503,
    description: 'Not ready; `error` names each failing part (database, migrations, delay)',
  })
  ready() {
    return this.health.check([
      () => this.database.pingCheck('database').withTimeout(PING_TIMEOUT_MS),
      () => this.migrations.check('migrations'),
      () => this.delay.check('delay'),
    ]);
  }
}
