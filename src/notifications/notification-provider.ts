/**
 * The service that reaches customers (email, SMS, push): an injectable seam.
 * The app binds the fake (fake-notification-provider.ts); a deployment binds
 * its provider's client to NOTIFICATION_PROVIDER instead.
 */
export const NOTIFICATION_PROVIDER = Symbol('NOTIFICATION_PROVIDER');

/** One message to one customer. */
export interface CustomerNotification {
  /** The customer, as the order names them (`userId`): the provider resolves the address. */
  to: string;
  template: 'order-closed-unpaid';
  subject: string;
  text: string;
  /**
   * The same for every attempt at this message: a provider that takes
   * idempotency keys sends it once even when a send succeeded but the
   * transaction recording it did not commit and the task ran again.
   */
  idempotencyKey: string;
}

export interface NotificationReceipt {
  /** The provider's id for the message. */
  messageId: string;
}

export interface NotificationProvider {
  /** Sends the message, or throws (the delayed task retries); `signal` aborts at the handler's timeout. */
  send(notification: CustomerNotification, signal?: AbortSignal): Promise<NotificationReceipt>;
}
