import type * as OtelApi from '@opentelemetry/api';
import type { Tracer } from '@opentelemetry/api';
import { formatTraceParent, type TraceCarrier } from '../trace-carrier.js';
import { PassSpans } from './pass-spans.js';

/** `@opentelemetry/api`, as a dynamic import gives it (its named exports, or them as `default`). */
type OpenTelemetryApi = typeof OtelApi;

/** The instrumentation scope of every span the package starts. */
const TRACER_NAME = 'nest-delay';

/** Loads `@opentelemetry/api`, an optional peer, once at boot; undefined when off or not installed, and then none of it is ever called. */
export async function loadTaskTracing(
  enabled: boolean,
  instanceId: string,
  load: () => Promise<unknown> = () => import('@opentelemetry/api'),
): Promise<TaskTracing | undefined> {
  if (!enabled) return undefined;
  let loaded: Partial<OpenTelemetryApi> & { default?: OpenTelemetryApi };
  try {
    loaded = (await load()) as typeof loaded;
  } catch {
    return undefined;
  }
  const api = loaded.trace ? (loaded as OpenTelemetryApi) : loaded.default;
  return api?.trace ? new TaskTracing(api, instanceId) : undefined;
}

/**
 * The package's side of OpenTelemetry: a task's row keeps the trace context
 * it was scheduled in (`capture`), and each run gets a span continuing it
 * (`pass`). Only the API is used; with no SDK registered a claim does no tracing work.
 */
export class TaskTracing {
  private readonly api: OpenTelemetryApi;

  /** `api` is `@opentelemetry/api`, typed loosely so the package's declarations never need it installed. */
  constructor(
    api: object,
    private readonly instanceId: string,
  ) {
    this.api = api as OpenTelemetryApi;
  }

  /** The active span's W3C context, to store with a task scheduled now; null outside a span. */
  capture(): TraceCarrier | null {
    const spanContext = this.api.trace.getSpanContext(this.api.context.active());
    if (!spanContext || !this.api.isSpanContextValid(spanContext)) return null;
    const { traceId, spanId, traceFlags, traceState } = spanContext;
    const traceparent = formatTraceParent(traceId, spanId, traceFlags);
    const tracestate = traceState?.serialize();
    return tracestate ? { traceparent, tracestate } : { traceparent };
  }

  /** Runs `fn` outside every trace: a claim's timer may have been armed inside a request, whose trace its statements must not join. */
  detached<T>(fn: () => T): T {
    return this.api.context.with(this.api.ROOT_CONTEXT, fn);
  }

  /** The spans of one claim pass, or undefined when no SDK is registered (nothing to record). */
  pass(): PassSpans | undefined {
    const tracer = this.liveTracer();
    return tracer && new PassSpans(this.api, tracer, this.instanceId);
  }

  /** The SDK's tracer, or undefined before one is registered (the global provider is a proxy whose tracers are no-ops until then). */
  private liveTracer(): Tracer | undefined {
    const provider = this.api.trace.getTracerProvider() as OtelApi.TracerProvider &
      Partial<Pick<OtelApi.ProxyTracerProvider, 'getDelegateTracer'>>;
    if (typeof provider.getDelegateTracer === 'function')
      return provider.getDelegateTracer(TRACER_NAME);
    return provider.getTracer(TRACER_NAME);
  }
}
