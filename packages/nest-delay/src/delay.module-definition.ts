import { createRequire } from 'node:module';
import { ConfigurableModuleBuilder, type Provider } from '@nestjs/common';
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
 * TypeORM is an optional peer: an app without it (DelayModule's `connection`
 * option) boots without it. Its DataSource class, the injection token of the
 * app's default DataSource, is loaded with require: typeorm is CommonJS with
 * an ESM wrapper over the same module, so this is the class the app and
 * `@nestjs/typeorm` import. Not `@nestjs/typeorm` itself: it is ESM-only, and
 * Jest before Node 24.9 cannot require() an ES module, so a user's Jest suite
 * on Node 20 or 22 would fail to load this package. Not a top-level await:
 * that would stop a CommonJS app from require()-ing the package.
 */
const typeorm = loadTypeorm();

function loadTypeorm(): typeof import('typeorm') | undefined {
  try {
    return createRequire(import.meta.url)('typeorm');
  } catch (error) {
    if ((error as { code?: string }).code === 'MODULE_NOT_FOUND') return undefined;
    throw error;
  }
}

/**
 * `@nestjs/typeorm`'s token for the DataSource named `name`: the DataSource
 * class for the default one, `<name>DataSource` for the others (its
 * getDataSourceToken; a spec holds the two equal).
 */
export function dataSourceToken(name: string | undefined): unknown {
  if (!typeorm) return undefined;
  return name === undefined || name === 'default' ? typeorm.DataSource : `${name}DataSource`;
}

/** The app's DataSource named `name`, or null when there is none to inject. */
function dataSourceProvider(name: string | undefined): Provider {
  const token = dataSourceToken(name);
  if (token === undefined) return { provide: DELAY_DATA_SOURCE, useValue: null };
  return {
    provide: DELAY_DATA_SOURCE,
    useFactory: (dataSource: unknown) => dataSource ?? null,
    inject: [{ token: token as string, optional: true }],
  };
}
