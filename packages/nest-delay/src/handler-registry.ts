import { Injectable } from '@nestjs/common';
import { DuplicateHandlerError } from './errors/duplicate-handler.error.js';
import type { TaskHandlerFn } from './task.types.js';

interface RegisteredHandler {
  fn: TaskHandlerFn;
  /** `Class.method`, for error messages. */
  name: string;
}

/** Task type → the one function that runs it. Filled at boot by the explorer. */
@Injectable()
export class HandlerRegistry {
  private readonly handlers = new Map<string, RegisteredHandler>();

  register(type: string, fn: TaskHandlerFn, name: string): void {
    const existing = this.handlers.get(type);
    if (existing) throw new DuplicateHandlerError(type, existing.name, name);
    this.handlers.set(type, { fn, name });
  }

  get(type: string): TaskHandlerFn | undefined {
    return this.handlers.get(type)?.fn;
  }

  has(type: string): boolean {
    return this.handlers.has(type);
  }

  types(): string[] {
    return [...this.handlers.keys()].sort();
  }
}
