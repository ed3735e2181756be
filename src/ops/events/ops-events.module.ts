import { Module } from '@nestjs/common';
import { DelayEventsBridge } from './delay-events.bridge.js';

/** The bridge from nest-delay's observer to EventEmitter2; needs EventEmitterModule.forRoot. */
@Module({ providers: [DelayEventsBridge], exports: [DelayEventsBridge] })
export class OpsEventsModule {}
