import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { DELAYED_TASK_HANDLER, RECURRING_TASK } from './delay.constants.js';
import type { HandlerMetadata } from './delayed-task-handler.decorator.js';
import { HandlerRegistry } from './handler-registry.js';
import { requestScopedHandler } from './delay.messages.js';
import type { RecurringMetadata } from './schedules/recurring-task.decorator.js';
import { ScheduleRegistry } from './schedules/schedule-registry.js';
import { resolveSchedule } from './schedules/schedule-spec.js';

/** Finds @DelayedTaskHandler and @RecurringTask methods at module init, before anything can fire (application bootstrap). */
@Injectable()
export class DelayExplorer implements OnModuleInit {
  private readonly logger = new Logger('DelayModule');

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
    private readonly registry: HandlerRegistry,
    private readonly schedules: ScheduleRegistry,
  ) {}

  onModuleInit(): void {
    for (const wrapper of this.discovery.getProviders()) {
      const prototype = (wrapper.metatype as { prototype?: object } | undefined)?.prototype;
      if (!prototype || typeof wrapper.metatype !== 'function') continue;
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      for (const method of this.scanner.getAllMethodNames(prototype)) {
        const fn = (prototype as Record<string, unknown>)[method];
        if (typeof fn !== 'function') continue;
        const recurring = this.reflector.get<RecurringMetadata | undefined>(
          RECURRING_TASK,
          fn as () => unknown,
        );
        const meta =
          this.reflector.get<HandlerMetadata | undefined>(
            DELAYED_TASK_HANDLER,
            fn as () => unknown,
          ) ??
          (recurring && this.declareSchedule(recurring, `${wrapper.metatype.name}.${method}`));
        if (meta === undefined) continue;
        const name = `${wrapper.metatype.name}.${method}`;
        // A task has no request to build a request-scoped provider for: say
        // so, rather than leave its tasks to be dead-lettered for want of a handler.
        if (!wrapper.isDependencyTreeStatic() || !instance) {
          this.logger.warn(requestScopedHandler(meta.type, name));
          continue;
        }
        const bound = (instance[method] as (...args: unknown[]) => unknown).bind(instance);
        this.registry.register(meta.type, bound, name, meta.options);
      }
    }
  }

  /** A @RecurringTask: its schedule declared, and its method the handler of its task type. */
  private declareSchedule({ name, options }: RecurringMetadata, where: string): HandlerMetadata {
    const { maxAttempts, retry, timeout, ...rule } = options ?? {};
    const { spec, recurrence } = resolveSchedule(name, rule, true, `@RecurringTask on ${where}`);
    this.schedules.declare(spec, recurrence, `@RecurringTask on ${where}`);
    const handlerOptions = Object.fromEntries(
      Object.entries({ maxAttempts, retry, timeout }).filter(([, value]) => value !== undefined),
    );
    return { type: spec.type, options: handlerOptions };
  }
}
