import {
  Module,
  type DynamicModule,
  type MiddlewareConsumer,
  type NestModule,
} from '@nestjs/common';
import { AdminAuthGuard } from './admin-auth.guard.js';
import { AdminClusterController } from './admin-cluster.controller.js';
import { AdminEntitiesController } from './admin-entities.controller.js';
import { AdminPageController } from './admin-page.controller.js';
import { AdminSchedulesController } from './admin-schedules.controller.js';
import { adminRequest } from './admin-request.middleware.js';
import { AdminStreamController } from './admin-stream.controller.js';
import { AdminTasksController } from './admin-tasks.controller.js';
import { AdminTypesController } from './admin-types.controller.js';
import { ADMIN_OPTIONS, type AdminOptions } from './admin.options.js';
import { FailureThrottle } from './failure-throttle.js';
import { TypeLimitsReader } from './type-limits.reader.js';

/**
 * The admin API under /admin/api, behind a bearer token, and the live page
 * at /admin that uses it. AppModule imports it only when ADMIN_TOKEN is set,
 * so without a token none of its routes exist (404). Needs the global DelayModule (DelayService, DelayAdmin, DelaySchedules, DelayLimits, CLOCK).
 */
@Module({})
export class AdminModule implements NestModule {
  static register(options: AdminOptions): DynamicModule {
    return {
      module: AdminModule,
      controllers: [
        AdminTasksController,
        AdminEntitiesController,
        AdminClusterController,
        AdminSchedulesController,
        AdminTypesController,
        AdminStreamController,
        AdminPageController,
      ],
      providers: [
        { provide: ADMIN_OPTIONS, useValue: options },
        FailureThrottle,
        AdminAuthGuard,
        TypeLimitsReader,
      ],
    };
  }

  configure(consumer: MiddlewareConsumer): void {
    consumer
      .apply(adminRequest)
      .forRoutes(
        AdminTasksController,
        AdminEntitiesController,
        AdminClusterController,
        AdminSchedulesController,
        AdminTypesController,
        AdminStreamController,
      );
  }
}
