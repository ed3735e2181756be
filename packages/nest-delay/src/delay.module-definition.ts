import { ConfigurableModuleBuilder } from '@nestjs/common';
import { getDataSourceToken } from '@nestjs/typeorm';
import type { DelayModuleOptions } from './delay.options.js';
import { DELAY_DATA_SOURCE } from './delay.tokens.js';

/** Given to forRoot/forRootAsync beside the options, because they shape the module itself. */
export interface DelayModuleExtras {
  /** Register DelayService globally (default true). */
  isGlobal?: boolean;
  /**
   * The TypeORM DataSource holding `delayed_task`: its name (or options) as
   * given to `TypeOrmModule.forRoot`, as `@nestjs/bullmq` picks a connection.
   * Default: the default DataSource.
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
      providers: [
        ...(definition.providers ?? []),
        { provide: DELAY_DATA_SOURCE, useExisting: getDataSourceToken(extras.dataSource) },
      ],
    }),
  )
  .build();
