import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { DelayModuleOptions } from './delay.options.js';

export const {
  ConfigurableModuleClass: DelayConfigurableModule,
  MODULE_OPTIONS_TOKEN: DELAY_MODULE_OPTIONS,
  OPTIONS_TYPE: DELAY_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: DELAY_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<DelayModuleOptions>()
  .setClassMethodName('forRoot')
  .setExtras({ isGlobal: true }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal,
  }))
  .build();
