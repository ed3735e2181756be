import {
  Module,
  type CanActivate,
  type DynamicModule,
  type MiddlewareConsumer,
  type NestModule,
  type Provider,
} from '@nestjs/common';
import { RouterModule } from '@nestjs/core';
import { CLOCK, type Clock } from '../clock/index.js';
import { DELAY_OBSERVER_CALLS } from '../delay.tokens.js';
import type { ObserverCalls } from '../observer/observer-calls.js';
import { AdminAppGuard } from './admin-app.guard.js';
import { AdminClusterController } from './admin-cluster.controller.js';
import { AdminEntitiesController } from './admin-entities.controller.js';
import { resolveAdminOptions } from './admin-options.check.js';
import { AdminPageController } from './admin-page.controller.js';
import { AdminPulse } from './admin-pulse.js';
import { adminRequest } from './admin-request.middleware.js';
import { AdminSchedulesController } from './admin-schedules.controller.js';
import { AdminStreamController } from './admin-stream.controller.js';
import { AdminTasksController } from './admin-tasks.controller.js';
import { AdminTokenGuard } from './admin-token.guard.js';
import { AdminTypesController } from './admin-types.controller.js';
import { ADMIN_APP_GUARD, ADMIN_OPTIONS, type DelayAdminModuleOptions } from './admin.options.js';
import { FailureThrottle } from './failure-throttle.js';
import { TypeLimitsReader } from './type-limits.reader.js';

const API_CONTROLLERS = [
  AdminTasksController,
  AdminEntitiesController,
  AdminClusterController,
  AdminSchedulesController,
  AdminTypesController,
  AdminStreamController,
];

/**
 * `DelayAdminModule.forRoot({ path, guard | token })`: the live page at
 * `path` (default `/admin`) and the admin API under `path/api`, behind the
 * app's guard, a bearer token or both; it refuses to mount with neither
 * unless told `unsafeNoAuth: true`. Needs DelayModule, global (its default).
 */
@Module({})
export class DelayAdminModule implements NestModule {
  static forRoot(options: DelayAdminModuleOptions): DynamicModule {
    const resolved = resolveAdminOptions(options);
    const { guard } = resolved;
    const guardProvider: Provider[] =
      guard === undefined
        ? []
        : [
            typeof guard === 'function'
              ? { provide: ADMIN_APP_GUARD, useClass: guard }
              : { provide: ADMIN_APP_GUARD, useValue: guard satisfies CanActivate },
          ];
    return {
      module: DelayAdminModule,
      imports: [
        RouterModule.register([{ path: resolved.path, module: DelayAdminModule }]),
        ...(options.imports ?? []),
      ],
      controllers: [...API_CONTROLLERS, AdminPageController],
      providers: [
        { provide: ADMIN_OPTIONS, useValue: resolved },
        ...guardProvider,
        // What this instance ran, second by second: an observer of the engine beside the app's.
        {
          provide: AdminPulse,
          useFactory: (calls: ObserverCalls, clock: Clock) => {
            const pulse = new AdminPulse(() => clock.now());
            calls.add(pulse);
            return pulse;
          },
          inject: [DELAY_OBSERVER_CALLS, CLOCK],
        },
        FailureThrottle,
        AdminAppGuard,
        AdminTokenGuard,
        TypeLimitsReader,
      ],
    };
  }

  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(adminRequest).forRoutes(...API_CONTROLLERS);
  }
}
