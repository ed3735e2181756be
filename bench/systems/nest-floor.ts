/**
 * The floor under this project's memory: the bench app's Nest application
 * context with TypeORM on the bench database (the same migrations run at
 * start) and no DelayModule. It holds no tasks; scheduling is a no-op, so
 * what it costs at rest is what the framework costs before the library.
 */
import 'reflect-metadata';
import { Module, type DynamicModule, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { benchTypeOrm } from './bench-typeorm.js';
import type { SystemFactory, SystemSettings } from './system.js';

@Module({})
class FloorAppModule {
  static forRoot(settings: SystemSettings): DynamicModule {
    return {
      module: FloorAppModule,
      imports: [benchTypeOrm(settings)],
    };
  }
}

export const createNestFloor: SystemFactory = (settings) => {
  let app: INestApplicationContext | undefined;
  return {
    async start() {
      app = await NestFactory.createApplicationContext(FloorAppModule.forRoot(settings), {
        logger: ['error', 'warn'],
      });
    },
    async scheduleOne() {},
    async scheduleMany() {},
    async stop() {
      await app?.close();
    },
  };
};
