type Env = Record<string, string | undefined>;

const set = (value: string | undefined) => value !== undefined && value.trim() !== '';

/**
 * Whether the standard OpenTelemetry environment asks this process for
 * traces: an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) or a traces exporter other than
 * `none` (`OTEL_TRACES_EXPORTER`), unless `OTEL_SDK_DISABLED=true`. Off
 * otherwise: a service nobody collects traces from pays nothing for them.
 */
export function tracingRequested(env: Env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = env.OTEL_TRACES_EXPORTER?.split(',').map((name) => name.trim().toLowerCase());
  if (exporters?.some((name) => name !== '' && name !== 'none')) return true;
  if (exporters?.includes('none')) return false;
  return set(env.OTEL_EXPORTER_OTLP_ENDPOINT) || set(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}
