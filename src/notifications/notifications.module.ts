import { Module } from '@nestjs/common';
import { FakeNotificationProvider } from './fake-notification-provider.js';
import { NOTIFICATION_PROVIDER } from './notification-provider.js';

/**
 * NOTIFICATION_PROVIDER, bound to the fake: this example sends nothing for
 * real. A deployment replaces the binding with its provider's client.
 */
@Module({
  providers: [
    FakeNotificationProvider,
    { provide: NOTIFICATION_PROVIDER, useExisting: FakeNotificationProvider },
  ],
  exports: [NOTIFICATION_PROVIDER, FakeNotificationProvider],
})
export class NotificationsModule {}
