import { Inject, Injectable, Logger } from '@nestjs/common';
import { CLOCK, type Clock } from 'nest-delay';
import type {
  CustomerNotification,
  NotificationProvider,
  NotificationReceipt,
} from './notification-provider.js';

/** A message the fake accepted, and when by the app's clock (a ManualClock in tests). */
export interface SentNotification extends CustomerNotification {
  messageId: string;
  atMs: number;
}

/** The most sends kept: a long-running development server does not grow without end. */
const KEPT = 10_000;

/**
 * The provider of development and tests: logs each message instead of
 * sending it and keeps it in `sent`. `failNext(n)` makes the next n sends
 * throw, as a provider that is down would, to show the task's retries.
 */
@Injectable()
export class FakeNotificationProvider implements NotificationProvider {
  private readonly logger = new Logger('FakeNotificationProvider');
  readonly sent: SentNotification[] = [];
  /** Every call to send, whether it failed or not, by the app's clock. */
  readonly attemptsAtMs: number[] = [];
  private failures = 0;
  private failure = 'the fake provider was told to fail';
  private count = 0;

  constructor(@Inject(CLOCK) private readonly clock: Clock) {}

  send(notification: CustomerNotification): Promise<NotificationReceipt> {
    const atMs = this.clock.now();
    this.attemptsAtMs.push(atMs);
    if (this.failures > 0) {
      this.failures--;
      return Promise.reject(new Error(`${this.failure} (to ${notification.to})`));
    }
    const messageId = `fake-${++this.count}`;
    this.sent.push({ ...notification, messageId, atMs });
    if (this.sent.length > KEPT) this.sent.splice(0, this.sent.length - KEPT);
    this.logger.log(`${notification.template} to ${notification.to}: ${notification.subject}`);
    return Promise.resolve({ messageId });
  }

  /** The next `count` sends throw `message`. */
  failNext(count: number, message = this.failure): void {
    this.failures = count;
    this.failure = message;
  }

  /** Forgets what was sent and any failures still to come. */
  reset(): void {
    this.sent.length = 0;
    this.attemptsAtMs.length = 0;
    this.failures = 0;
  }
}
