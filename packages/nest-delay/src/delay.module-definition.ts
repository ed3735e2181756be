import { createRequire } from 'node:module';
import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { Provider } from '@nestjs/common';
import type { DelayModuleOptions } from './delay.options.js';
import { DELAY_DATA_SOURCE } from './delay.tokens.js';

/** Given to forRoot/forRootAsync beside the options, because they shape the module itself. */
export interface DelayModuleExtras {
  /** Register DelayService globally (default true). */
  isGlobal?: boolean;
  /**
   * The TypeORM DataSource holding `delayed_task`: its name (or options) as
   * given to `TypeOrmModule.forRoot`, as `@nestjs/bullmq` picks a connection.
   * Default: the default DataSource. Not used when the options give a
   * `connection` of the engine's own.
   */
  dataSource?: string;
}

export const {
  ConfigurableModuleClass: DelayConfigurableModule,
  MODULE_OPTIONS_TOKEN: DELAY_MODULE_OPTIONS,
  OPTIONS_TYPE: DELAY_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: DELAY_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<DelayModuleOptions>()
  .setClassMethodName('forRoot')
  .setExtras<DelayModuleExtras>(
    { isGlobal: true, dataSource: undefined },
    (definition, extras) => ({
      ...definition,
      global: extras.isGlobal,
      providers: [...(definition.providers ?? []), dataSourceProvider(extras.dataSource)],
    }),
  )
  .build();

/**
 * `@nestjs/typeorm` is an optional peer: loaded only where installed, so that
 * an app without TypeORM (DelayModule's `connection` option) boots without it.
 */
const nestTypeorm = loadNestTypeorm();

/**
 * Loaded synchronously (it is CommonJS), not by a top-level await, which
 * would stop a CommonJS app from require()-ing the package. Missing, or
 * missing its typeorm: undefined. The same instance the app imports.
 */
function loadNestTypeorm(): typeof import('@nestjs/typeorm') | undefined {
  try {
    return createRequire(import.meta.url)('@nestjs/typeorm');
  } catch (error) {
    if ((error as { code?: string }).code === 'MODULE_NOT_FOUND') return undefined;
    throw error;
  }
}

/** The app's DataSource named `name`, or null when there is none to inject. */
function dataSourceProvider(name: string | undefined): Provider {
  if (!nestTypeorm) return { provide: DELAY_DATA_SOURCE, useValue: null };
  return {
    provide: DELAY_DATA_SOURCE,
    useFactory: (dataSource: unknown) => dataSource ?? null,
    inject: [{ token: nestTypeorm.getDataSourceToken(name), optional: true }],
  };
}
