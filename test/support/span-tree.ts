/**
 * Finished spans as the indented tree a trace viewer draws: one line per
 * span with its start after the trace's first span, its duration and the
 * attributes an operator reads. For test output and the README.
 */
export interface TreeSpan {
  name: string;
  spanId: string;
  parentSpanId?: string;
  traceId: string;
  startMs: number;
  durationMs: number;
  attributes: Record<string, unknown>;
  status?: string;
}

/** The attributes shown, in this order, when a span has them. */
const SHOWN = [
  'http.request.method',
  'http.route',
  'http.response.status_code',
  'nestjs.type',
  'nestjs.callback',
  'db.query.text',
  'db.statement',
  'delay.task.id',
  'delay.task.type',
  'delay.task.key',
  'delay.task.attempt',
  'delay.task.lateness_ms',
  'delay.task.outcome',
  'delay.instance.id',
];

export function spanTree(spans: Array<TreeSpan | SdkSpan>): string {
  const all = spans.map((s) => ('spanContext' in s ? fromSdk(s) : s));
  const byParent = new Map<string, TreeSpan[]>();
  const ids = new Set(all.map((s) => s.spanId));
  const roots: TreeSpan[] = [];
  for (const span of all) {
    if (span.parentSpanId && ids.has(span.parentSpanId)) {
      const siblings = byParent.get(span.parentSpanId) ?? [];
      siblings.push(span);
      byParent.set(span.parentSpanId, siblings);
    } else roots.push(span);
  }
  const lines: string[] = [];
  const byStart = (a: TreeSpan, b: TreeSpan) => a.startMs - b.startMs;
  for (const root of roots.sort(byStart)) {
    lines.push(`trace ${root.traceId}`);
    const walk = (span: TreeSpan, depth: number) => {
      const attrs = SHOWN.filter((key) => span.attributes[key] !== undefined)
        .map((key) => `${key}=${short(span.attributes[key])}`)
        .join(' ');
      const offset = `+${since(span.startMs - root.startMs)}`;
      lines.push(
        `${'  '.repeat(depth + 1)}${span.name}  ${offset}  ${span.durationMs.toFixed(1)} ms` +
          `${span.status ? `  ${span.status}` : ''}${attrs ? `  ${attrs}` : ''}`,
      );
      for (const child of (byParent.get(span.spanId) ?? []).sort(byStart)) walk(child, depth + 1);
    };
    walk(root, 0);
  }
  return lines.join('\n');
}

/** What the SDK's ReadableSpan offers, as far as the tree needs it. */
interface SdkSpan {
  name: string;
  spanContext(): { traceId: string; spanId: string };
  parentSpanContext?: { spanId: string };
  startTime: [number, number];
  duration: [number, number];
  attributes: Record<string, unknown>;
  status: { code: number; message?: string };
}

function fromSdk(span: SdkSpan): TreeSpan {
  const { traceId, spanId } = span.spanContext();
  return {
    name: span.name,
    traceId,
    spanId,
    parentSpanId: span.parentSpanContext?.spanId,
    startMs: span.startTime[0] * 1000 + span.startTime[1] / 1e6,
    durationMs: span.duration[0] * 1000 + span.duration[1] / 1e6,
    attributes: span.attributes,
    status: span.status.code === 2 ? `ERROR(${span.status.message ?? ''})` : undefined,
  };
}

function short(value: unknown): string {
  const text = String(value).replace(/\s+/g, ' ');
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

function since(ms: number): string {
  if (ms < 1000) return `${ms.toFixed(1)} ms`;
  const s = ms / 1000;
  if (s < 3600) return `${s.toFixed(3)} s`;
  return `${Math.floor(s / 3600)} h ${((s % 3600) / 60).toFixed(0)} min`;
}
