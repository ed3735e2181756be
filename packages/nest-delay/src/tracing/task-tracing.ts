import type * as OtelApi from '@opentelemetry/api';
import type { Tracer } from '@opentelemetry/api';
import { formatTraceParent, type TraceCarrier } from '../trace-carrier.js';
import { PassSpans } from './pass-spans.js';

/** `@opentelemetry/api`, as a dynamic import gives it (its named exports, or them as `default`). */
type OpenTelemetryApi = typeof OtelApi;

/** The instrumentation scope of every span the package starts. */
const TRACER_NAME = 'nest-delay';

/**
 * Loads `@opentelemetry/api`, the package's optional peer, once at boot:
 * undefined when tracing is off or the API is not installed, and then
 * nothing of OpenTelemetry is ever loaded or called.
 */
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
 * The package's side of OpenTelemetry: the trace context a task is
 * scheduled in goes into its row (`capture`), and each run of its handler
 * gets a span that continues it (`pass`, one per claim pass). Only the API
 * is used; what records and exports spans is the app's SDK, and with none
 * registered a claim does no tracing work at all.
 */
export class TaskTracing {
  private readonly api: OpenTelemetryApi;

  /**
   * `api` is `@opentelemetry/api`, typed loosely here so that the package's
   * declarations never need it installed.
   */
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

  /**
   * Runs `fn` outside every trace. A claim starts from a timer that may have
   * been armed inside a request (a schedule() call moves the wheel's timer):
   * its own statements must not join that request's trace, long finished.
   */
  detached<T>(fn: () => T): T {
    return this.api.context.with(this.api.ROOT_CONTEXT, fn);
  }

  /** The spans of one claim pass, or undefined when no SDK is registered (nothing to record). */
  pass(): PassSpans | undefined {
    const tracer = this.liveTracer();
    return tracer && new PassSpans(this.api, tracer, this.instanceId);
  }

  /**
   * The SDK's tracer, or undefined before one is registered: the API's global
   * provider is a proxy whose tracers are no-ops until an SDK sets its
   * delegate, and asking the proxy for the delegate's tracer costs one call.
   */
  private liveTracer(): Tracer | undefined {
    const provider = this.api.trace.getTracerProvider() as OtelApi.TracerProvider &
      Partial<Pick<OtelApi.ProxyTracerProvider, 'getDelegateTracer'>>;
    if (typeof provider.getDelegateTracer === 'function')
      return provider.getDelegateTracer(TRACER_NAME);
    return provider.getTracer(TRACER_NAME);
  }
}
