/**
 * A task's W3C trace context as `delayed_task.trace_context` keeps it: the
 * `traceparent` and `tracestate` header values a propagator would send, so
 * a reader (or psql) sees the standard form and nothing of OpenTelemetry's.
 */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
}

/** What the carrier holds, read back: ids as lower-case hex, flags as a number. */
export interface ParsedTraceParent {
  traceId: string;
  spanId: string;
  traceFlags: number;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZEROS = /^0+$/;

export function formatTraceParent(traceId: string, spanId: string, traceFlags: number): string {
  return `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** Version 00 only (what this package writes); anything else reads as no context, so a damaged column starts a new trace rather than fail the task. */
export function parseTraceParent(value: unknown): ParsedTraceParent | undefined {
  if (typeof value !== 'string') return undefined;
  const match = TRACEPARENT.exec(value);
  if (!match || ZEROS.test(match[1]) || ZEROS.test(match[2])) return undefined;
  return { traceId: match[1], spanId: match[2], traceFlags: parseInt(match[3], 16) };
}
