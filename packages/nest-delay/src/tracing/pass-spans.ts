import type * as OtelApi from '@opentelemetry/api';
import type { Context, Span, Tracer } from '@opentelemetry/api';
import type { ClaimRow } from '../tasks/task-row.js';
import type { TaskId } from '../task.types.js';
import type { Fate } from '../tasks/task-transitions.js';
import { parseTraceParent, type TraceCarrier } from '../trace-carrier.js';

/**
 * `delay.task.outcome`: what the run a span covers came to, in an operator's
 * words; a fate not listed here (a recurring occurrence's `skip`) is named as
 * its transition.
 */
export type RunOutcome = 'executed' | 'retry' | 'dead' | 'discard' | 'snooze' | 'rolled-back';

const OUTCOME: Readonly<Record<string, RunOutcome>> = {
  complete: 'executed',
  retry: 'retry',
  exhaust: 'dead',
  discard: 'discard',
  snooze: 'snooze',
};

interface Run {
  span: Span;
  context: Context;
  /** An exception is on the span already (the handler's own error). */
  recorded: boolean;
}

/**
 * The spans of one claim pass, one per run (`delay.run <type>`, a child of
 * the context the task was scheduled in). A span ends with the pass, so its
 * outcome is the one that committed; a pass rolled back for a savepoint pass
 * ends the runs it undid as `rolled-back` and keeps those of known failures,
 * which the savepoint pass commits without rerunning.
 */
export class PassSpans {
  private readonly runs = new Map<TaskId, Run>();
  private readonly api: typeof OtelApi;
  private readonly tracer: Tracer;

  constructor(
    api: object,
    tracer: object,
    private readonly instanceId: string,
  ) {
    this.api = api as typeof OtelApi;
    this.tracer = tracer as Tracer;
  }

  /** Opens the span of a claimed task's run; `claimMs` is the claim's time (lateness). */
  open(row: ClaimRow, claimMs: number): void {
    const { api } = this;
    const attributes: OtelApi.Attributes = {
      'messaging.system': 'nest-delay',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'run',
      'messaging.destination.name': row.type,
      'delay.task.id': row.id,
      'delay.task.type': row.type,
      'delay.task.attempt': row.attempts,
      'delay.task.lateness_ms': Math.max(0, Math.round(claimMs - row.due_at.getTime())),
      'delay.instance.id': this.instanceId,
    };
    if (row.key !== null) attributes['delay.task.key'] = row.key;
    const span = this.tracer.startSpan(
      `delay.run ${row.type}`,
      { kind: api.SpanKind.CONSUMER, attributes },
      this.parentOf(row.trace_context),
    );
    this.runs.set(row.id, {
      span,
      context: api.trace.setSpan(api.ROOT_CONTEXT, span),
      recorded: false,
    });
  }

  /** Runs `fn` with the task's span active: what it sends through `pg` nests under it. */
  within<T>(id: TaskId, fn: () => T): T {
    const run = this.runs.get(id);
    return run ? this.api.context.with(run.context, fn) : fn();
  }

  /** Runs `fn` under the span of the pass's only run, if it has exactly one (its COMMIT is that task's alone). */
  withinOnly<T>(fn: () => T): T {
    if (this.runs.size !== 1) return fn();
    const [run] = this.runs.values();
    return this.api.context.with(run.context, fn);
  }

  /** The handler threw (or was cut off): the error, with its stack, on the span. */
  failed(id: TaskId, error: unknown): void {
    const run = this.runs.get(id);
    if (!run) return;
    run.span.recordException(error instanceof Error ? error : new Error(String(error)));
    run.recorded = true;
  }

  /** The handler outlived its timeout and grace: the dispatcher charges it (retry, or dead). */
  cutOff(id: TaskId, outcome: 'retry' | 'dead', message: string): void {
    const run = this.runs.get(id);
    if (!run) return;
    this.runs.delete(id);
    run.span.setAttribute('delay.task.outcome', outcome);
    run.span.setStatus({ code: this.api.SpanStatusCode.ERROR, message });
    run.span.end();
  }

  /** The pass committed: each span gets its task's fate, and ends. */
  committed(fates: Fate[]): void {
    for (const fate of fates) {
      const run = this.runs.get(fate.row.id);
      if (!run) continue;
      this.runs.delete(fate.row.id);
      this.end(run, fate);
    }
    this.rolledBack();
  }

  /**
   * The pass rolled back: every run not in `keep` ends as undone (its
   * effects are gone; a savepoint pass runs it again under a new span).
   */
  rolledBack(keep: Iterable<TaskId> = []): void {
    const kept = new Set(keep);
    for (const [id, run] of this.runs) {
      if (kept.has(id)) continue;
      this.runs.delete(id);
      run.span.setAttribute('delay.task.outcome', 'rolled-back');
      run.span.end();
    }
  }

  private end({ span, recorded }: Run, fate: Fate): void {
    const { api } = this;
    span.setAttribute('delay.task.outcome', OUTCOME[fate.transition] ?? fate.transition);
    switch (fate.transition) {
      case 'retry':
      case 'exhaust': {
        const message = fate.transition === 'retry' ? fate.error : fate.reason;
        // A failure the handler did not throw (it left its transaction aborted).
        if (!recorded) span.recordException({ name: 'Error', message });
        span.setStatus({ code: api.SpanStatusCode.ERROR, message });
        if (fate.transition === 'retry')
          span.setAttribute('delay.task.retry_at', new Date(fate.dueAtMs).toISOString());
        break;
      }
      case 'discard':
        span.setAttribute('delay.task.reason', fate.reason);
        span.setStatus({ code: api.SpanStatusCode.ERROR, message: fate.reason });
        break;
      case 'snooze':
        span.setAttribute('delay.task.snoozed_until', new Date(fate.dueAtMs).toISOString());
        break;
    }
    span.end();
  }

  /** The scheduling request's context, remote, as the parent; none: a trace of its own. */
  private parentOf(carrier: TraceCarrier | null): Context {
    const { api } = this;
    const parsed = parseTraceParent(carrier?.traceparent);
    if (!parsed) return api.ROOT_CONTEXT;
    return api.trace.setSpanContext(api.ROOT_CONTEXT, {
      ...parsed,
      isRemote: true,
      traceState: carrier?.tracestate ? api.createTraceState(carrier.tracestate) : undefined,
    });
  }
}
