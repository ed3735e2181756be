import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { DELAYED_TASK_HANDLER } from './delay.constants.js';
import { HandlerRegistry } from './handler-registry.js';

/**
 * Finds @DelayedTaskHandler methods on every provider at module init (before
 * anything can fire, which happens at application bootstrap), the way
 * @nestjs/schedule finds @Cron. `orders` never has to import the registry.
 */
@Injectable()
export class DelayExplorer implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
    private readonly registry: HandlerRegistry,
  ) {}

  onModuleInit(): void {
    for (const wrapper of this.discovery.getProviders()) {
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      if (!instance || typeof instance !== 'object' || !wrapper.isDependencyTreeStatic()) continue;
      const prototype = Object.getPrototypeOf(instance) as object;
      for (const method of this.scanner.getAllMethodNames(prototype)) {
        const fn = instance[method];
        if (typeof fn !== 'function') continue;
        const type = this.reflector.get<string | undefined>(
          DELAYED_TASK_HANDLER,
          fn as () => unknown,
        );
        if (type === undefined) continue;
        this.registry.register(
          type,
          (fn as (...args: unknown[]) => unknown).bind(instance),
          `${instance.constructor.name}.${method}`,
        );
      }
    }
  }
}
