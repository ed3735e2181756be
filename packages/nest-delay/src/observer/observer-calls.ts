import type { Logger } from '@nestjs/common';
import { errorText } from '../delay.messages.js';
import type { DelayObserver } from '../delay-observer.js';

type EventOf<K extends keyof DelayObserver> = Parameters<NonNullable<DelayObserver[K]>>[0];

/**
 * Calls the app's observer and the package's own so that none can hurt a
 * task: a throw or a rejection is logged and dropped. Callers ask
 * `wants(name)` before building an event, so nobody listening costs nothing.
 */
export class ObserverCalls {
  private readonly observers: DelayObserver[];

  constructor(
    observer: DelayObserver | undefined,
    private readonly logger: Logger,
  ) {
    this.observers = observer ? [observer] : [];
  }

  add(observer: DelayObserver): void {
    this.observers.push(observer);
  }

  wants(name: keyof DelayObserver): boolean {
    return this.observers.some((observer) => typeof observer[name] === 'function');
  }

  emit<K extends keyof DelayObserver>(name: K, event: EventOf<K>): void {
    for (const observer of this.observers) {
      try {
        const returned = (observer[name] as ((event: EventOf<K>) => unknown) | undefined)?.call(
          observer,
          event,
        );
        if (returned instanceof Promise)
          returned.catch((error: unknown) => this.failed(name, error));
      } catch (error) {
        this.failed(name, error);
      }
    }
  }

  private failed(name: string, error: unknown): void {
    this.logger.error(`DelayObserver.${name} threw, ignored: ${errorText(error)}`);
  }
}
