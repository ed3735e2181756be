import { createRequire } from 'node:module';
import type { IncomingMessage } from 'node:http';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { NestInstrumentation } from '@opentelemetry/instrumentation-nestjs-core';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { NodeSDK, type NodeSDKConfiguration } from '@opentelemetry/sdk-node';

/** Requests nobody wants a trace of: probes and scrapes, every few seconds. */
const UNTRACED = /^\/(health\/|metrics(\?|$))/;

export interface Tracing {
  /** Exports what is still buffered, then stops. */
  shutdown(): Promise<void>;
}

/**
 * Starts the OpenTelemetry Node SDK as the OTEL_* environment configures it
 * (exporter and endpoint, service name, sampler, resource), tracing only:
 * metrics stay Prometheus (/metrics) and logs stay pino, unless OTEL_*
 * asks for them explicitly. Instrumented: HTTP, `pg` and Nest; nest-delay's
 * spans need nothing more than the API, which the SDK registers.
 *
 * `extra` is for tests (an in-memory exporter's span processor).
 */
export async function startTracing(extra: Partial<NodeSDKConfiguration> = {}): Promise<Tracing> {
  process.env.OTEL_METRICS_EXPORTER ??= 'none';
  process.env.OTEL_LOGS_EXPORTER ??= 'none';
  const nest = new NestInstrumentation();
  const sdk = new NodeSDK({
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (request: IncomingMessage) => UNTRACED.test(request.url ?? ''),
        // The route Express matched, as Jaeger lists requests: "POST /orders/:id/finish".
        applyCustomAttributesOnSpan: (span, request) => {
          const route = (request as { route?: { path?: unknown } }).route?.path;
          if (typeof route !== 'string' || !('method' in request)) return;
          span.setAttribute('http.route', route);
          span.updateName(`${request.method} ${route}`);
        },
      }),
      // Only statements inside a trace: the engine's heartbeats and window
      // loads every few seconds would each be a trace of one span.
      new PgInstrumentation({ requireParentSpan: true }),
      nest,
    ],
    ...extra,
  });
  sdk.start();
  await patchNestCore(nest);
  return { shutdown: () => sdk.shutdown() };
}

/**
 * The Nest instrumentation's newest release declares `@nestjs/core` below
 * 12 and hooks `require`, which NestJS 12 (ESM only) never goes through. Its
 * two patches (NestFactory.create and the router's handler factory, both on
 * prototypes) fit Nest 12 unchanged: they are applied here to the modules
 * the app imports, before any route exists.
 */
async function patchNestCore(nest: NestInstrumentation): Promise<void> {
  const version = (
    createRequire(import.meta.url)('@nestjs/core/package.json') as { version: string }
  ).version;
  const modules: Record<string, () => Promise<unknown>> = {
    '@nestjs/core/nest-factory.js': () => import('@nestjs/core/nest-factory.js'),
    '@nestjs/core/router/router-execution-context.js': () =>
      import('@nestjs/core/router/router-execution-context.js'),
  };
  for (const definition of nest.getModuleDefinitions())
    for (const file of definition.files) {
      const load = modules[file.name];
      if (load) file.patch(await load(), version);
    }
}
