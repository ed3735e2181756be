// Imported first of all by main.ts (or preloaded: `node --import ./dist/src/tracing.js`):
// the OpenTelemetry SDK must run before `pg` and Express are loaded for its
// instrumentations to patch them. Off unless the OTEL_* environment asks for
// traces (see tracingRequested); off, nothing of the SDK is even loaded.
import { tracingRequested } from './ops/tracing/tracing-env.js';

const tracing = tracingRequested(process.env)
  ? await (await import('./ops/tracing/start-tracing.js')).startTracing()
  : undefined;

/** Exports the spans still buffered; call before the process exits. */
export async function stopTracing(): Promise<void> {
  await tracing?.shutdown();
}
