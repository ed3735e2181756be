import { Inject, Injectable } from '@nestjs/common';
import {
  resolveBackoff,
  type Backoff,
  type HandlerOptions,
  type ResolvedDelayOptions,
} from './delay.options.js';
import { assertKnownHandlerOptions } from './option-keys.js';
import { DELAY_OPTIONS } from './delay.tokens.js';
import { parseDuration } from './duration.js';
import { isLimited, NO_LIMIT, resolveLimit, type ResolvedLimit } from './task-limit.js';
import { DuplicateHandlerError } from './errors/delay-errors.js';
import type { TaskContext, TaskOutcome } from './task.types.js';

export type TaskHandlerFn = (
  payload: any,
  context: TaskContext<any>,
) => TaskOutcome | void | Promise<TaskOutcome | void> | unknown;

/** A handler with its options resolved over the module's. */
export interface RegisteredHandler {
  fn: TaskHandlerFn;
  /** `Class.method`, for messages. */
  name: string;
  maxAttempts: number;
  backoff: Backoff;
  /** One attempt's time limit; see the module option handlerTimeout. */
  timeoutMs: number;
  /** Its declared shared limits, if any. */
  limit?: DeclaredLimit;
}

/** A handler's declared limits, checked, and its key function. */
export interface DeclaredLimit {
  limit: ResolvedLimit;
  key?: (payload: any) => string;
}

/** Task type → the one function that runs it. Filled at boot by the explorer. */
@Injectable()
export class HandlerRegistry {
  private readonly handlers = new Map<string, RegisteredHandler>();
  private keyed: string[] | undefined;

  /** The module's options: what a handler does not set itself. */
  constructor(@Inject(DELAY_OPTIONS) private readonly defaults: ResolvedDelayOptions) {}

  register(type: string, fn: TaskHandlerFn, name: string, options: HandlerOptions = {}): void {
    if (typeof type !== 'string' || type.length < 1 || type.length > 200) {
      throw new TypeError(
        `@DelayedTaskHandler on ${name}: type must be a string of 1 to 200 characters; got ${JSON.stringify(type)}`,
      );
    }
    const existing = this.handlers.get(type);
    if (existing) throw new DuplicateHandlerError(type, existing.name, name);
    assertKnownHandlerOptions(options, `@DelayedTaskHandler('${type}') on ${name}`);
    const where = `@DelayedTaskHandler('${type}') on ${name}: option`;
    const maxAttempts = options.maxAttempts ?? this.defaults.maxAttempts;
    if (!Number.isSafeInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > 1000) {
      throw new TypeError(
        `${where} maxAttempts must be an integer from 1 to 1000; got ${String(maxAttempts)}`,
      );
    }
    const backoff = resolveBackoff(options.retry, this.defaults.backoff, `${where} retry`);
    const timeoutMs =
      options.timeout === undefined
        ? this.defaults.handlerTimeoutMs
        : parseDuration(options.timeout, `${where} timeout`);
    if (timeoutMs < 1 || timeoutMs > 2 ** 31 - 1) {
      throw new TypeError(`${where} timeout must be from 1 ms to 24.8 days; got ${timeoutMs} ms`);
    }
    let limit: DeclaredLimit | undefined;
    if (options.limit !== undefined) {
      const declared = options.limit;
      if (declared === null || typeof declared !== 'object')
        throw new TypeError(`${where} limit must be an object; got ${String(declared)}`);
      if (declared.key !== undefined && typeof declared.key !== 'function')
        throw new TypeError(`${where} limit.key must be a function of the payload`);
      const resolved = resolveLimit(declared, NO_LIMIT, `${where} limit`);
      if (isLimited(resolved)) limit = { limit: resolved, key: declared.key };
    }
    this.handlers.set(type, { fn, name, maxAttempts, backoff, timeoutMs, limit });
    this.keyed = undefined;
  }

  get(type: string): RegisteredHandler | undefined {
    return this.handlers.get(type);
  }

  /** maxAttempts for a new task of this type: its handler's, else the module's. */
  maxAttemptsOf(type: string): number {
    return this.handlers.get(type)?.maxAttempts ?? this.defaults.maxAttempts;
  }

  /** Backoff for a failed task of this type: its handler's, else the module's. */
  backoffOf(type: string): Backoff {
    return this.handlers.get(type)?.backoff ?? this.defaults.backoff;
  }

  /** The longest attempt any handler here may take: the Postgres-side backstop is set above it. */
  longestTimeoutMs(): number {
    let longest = this.defaults.handlerTimeoutMs;
    for (const handler of this.handlers.values()) longest = Math.max(longest, handler.timeoutMs);
    return longest;
  }

  /** The limits its handler declares here, if any. */
  limitOf(type: string): DeclaredLimit | undefined {
    return this.handlers.get(type)?.limit;
  }

  /** Types whose limit has a key function: the gate reads their fired tasks' payloads. */
  keyedTypes(): string[] {
    this.keyed ??= [...this.handlers]
      .filter(([, handler]) => handler.limit?.key)
      .map(([type]) => type);
    return this.keyed;
  }

  has(type: string): boolean {
    return this.handlers.has(type);
  }

  types(): string[] {
    return [...this.handlers.keys()].sort();
  }
}
