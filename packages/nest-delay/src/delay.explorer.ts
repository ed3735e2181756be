import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { DELAYED_TASK_HANDLER } from './delay.constants.js';
import type { HandlerMetadata } from './delayed-task-handler.decorator.js';
import { HandlerRegistry } from './handler-registry.js';
import { requestScopedHandler } from './delay.messages.js';

/**
 * Finds @DelayedTaskHandler methods on every provider at module init (before
 * anything can fire, which happens at application bootstrap), the way
 * @nestjs/schedule finds @Cron, so a module with handlers never imports the registry.
 */
@Injectable()
export class DelayExplorer implements OnModuleInit {
  private readonly logger = new Logger('DelayModule');

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
    private readonly registry: HandlerRegistry,
  ) {}

  onModuleInit(): void {
    for (const wrapper of this.discovery.getProviders()) {
      const prototype = (wrapper.metatype as { prototype?: object } | undefined)?.prototype;
      if (!prototype || typeof wrapper.metatype !== 'function') continue;
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      for (const method of this.scanner.getAllMethodNames(prototype)) {
        const fn = (prototype as Record<string, unknown>)[method];
        if (typeof fn !== 'function') continue;
        const meta = this.reflector.get<HandlerMetadata | undefined>(
          DELAYED_TASK_HANDLER,
          fn as () => unknown,
        );
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
}
