import { tracingRequested } from './tracing-env.js';

describe('tracingRequested', () => {
  it.each([
    [{}, false],
    [{ OTEL_SERVICE_NAME: 'orders' }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318' }, true],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://jaeger:4318/v1/traces' }, true],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' }, false],
    [{ OTEL_TRACES_EXPORTER: 'console' }, true],
    [{ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318' }, false],
    [{ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' }, false],
    [{ OTEL_SDK_DISABLED: 'false', OTEL_TRACES_EXPORTER: 'otlp' }, true],
  ])('%j → %s', (env, expected) => {
    expect(tracingRequested(env)).toBe(expected);
  });
});
