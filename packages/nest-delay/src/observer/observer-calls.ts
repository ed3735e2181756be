import type { Logger } from '@nestjs/common';
import { errorText } from '../delay.messages.js';
import type { DelayObserver } from '../delay-observer.js';

type EventOf<K extends keyof DelayObserver> = Parameters<NonNullable<DelayObserver[K]>>[0];

/**
 * Calls the app's observer, if any, so that it cannot hurt a task: each call
 * is wrapped, a throw or a rejection is logged and dropped. Callers ask
 * `wants(name)` before building an event, so nobody listening costs nothing.
 */
export class ObserverCalls {
  constructor(
    private readonly observer: DelayObserver | undefined,
    private readonly logger: Logger,
  ) {}

  wants(name: keyof DelayObserver): boolean {
    return typeof this.observer?.[name] === 'function';
  }

  emit<K extends keyof DelayObserver>(name: K, event: EventOf<K>): void {
    try {
      const returned = (this.observer?.[name] as (event: EventOf<K>) => unknown)?.call(
        this.observer,
        event,
      );
      if (returned instanceof Promise) returned.catch((error: unknown) => this.failed(name, error));
    } catch (error) {
      this.failed(name, error);
    }
  }

  private failed(name: string, error: unknown): void {
    this.logger.error(`DelayObserver.${name} threw, ignored: ${errorText(error)}`);
  }
}
