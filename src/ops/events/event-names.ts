/**
 * The task events the app emits on its EventEmitter2, with the package's
 * event objects (TaskExecutedEvent...); the order events (`order.*`, with an
 * OrderDomainEvent) are named in src/orders/order-events.ts. All are
 * emitted after the change committed.
 */
export const DelayEvents = {
  scheduled: 'delay.task.scheduled',
  cancelled: 'delay.task.cancelled',
  executed: 'delay.task.executed',
  failed: 'delay.task.failed',
  deadLettered: 'delay.task.dead-lettered',
  snoozed: 'delay.task.snoozed',
  claim: 'delay.claim',
} as const;
