import { formatTraceParent, parseTraceParent } from './trace-carrier.js';

describe('traceparent', () => {
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const spanId = '00f067aa0ba902b7';

  it('round-trips ids and flags in the W3C version-00 form', () => {
    const header = formatTraceParent(traceId, spanId, 1);
    expect(header).toBe(`00-${traceId}-${spanId}-01`);
    expect(parseTraceParent(header)).toEqual({ traceId, spanId, traceFlags: 1 });
    expect(parseTraceParent(formatTraceParent(traceId, spanId, 0))?.traceFlags).toBe(0);
  });

  it.each([
    ['not a string', 42],
    ['another version', `01-${traceId}-${spanId}-01`],
    ['upper-case hex', `00-${traceId.toUpperCase()}-${spanId}-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${spanId}-01`],
    ['an all-zero span id', `00-${traceId}-${'0'.repeat(16)}-01`],
    ['a short span id', `00-${traceId}-${spanId.slice(1)}-01`],
  ])('reads %s as no context', (_what, value) => {
    expect(parseTraceParent(value)).toBeUndefined();
  });
});
