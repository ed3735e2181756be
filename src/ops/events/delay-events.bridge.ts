import { Injectable } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import type {
  ClaimEvent,
  DelayObserver,
  TaskCancelledEvent,
  TaskDeadLetteredEvent,
  TaskExecutedEvent,
  TaskFailedEvent,
  TaskScheduledEvent,
  TaskSnoozedEvent,
} from 'nest-delay';
import { DelayEvents } from './event-names.js';

/**
 * nest-delay's observer hook, re-emitted on the app's EventEmitter2 as
 * `delay.task.*`. The package takes a plain interface rather than depending
 * on @nestjs/event-emitter: a library user may have no emitter, or another
 * one, and the hook costs nothing when unset. The package already calls it
 * after commit only and logs a throw, so a listener that throws (registered
 * with `eventEmitter.on`, which rethrows) never reaches a task. An event
 * nobody listens to is not emitted at all: the claim's path stays as cheap
 * as without events until a listener (the admin page, a test) subscribes.
 */
@Injectable()
export class DelayEventsBridge implements DelayObserver {
  constructor(private readonly events: EventEmitter2) {}

  onScheduled(event: TaskScheduledEvent) {
    this.emit(DelayEvents.scheduled, event);
  }
  onCancelled(event: TaskCancelledEvent) {
    this.emit(DelayEvents.cancelled, event);
  }
  onExecuted(event: TaskExecutedEvent) {
    this.emit(DelayEvents.executed, event);
  }
  onFailed(event: TaskFailedEvent) {
    this.emit(DelayEvents.failed, event);
  }
  onDeadLettered(event: TaskDeadLetteredEvent) {
    this.emit(DelayEvents.deadLettered, event);
  }
  onSnoozed(event: TaskSnoozedEvent) {
    this.emit(DelayEvents.snoozed, event);
  }
  onClaim(event: ClaimEvent) {
    this.emit(DelayEvents.claim, event);
  }

  private emit(name: string, event: unknown): void {
    if (this.events.hasListeners(name)) this.events.emit(name, event);
  }
}
