import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** 1 ms to 10 minutes: a task on time is late by under a tick, a backlog by minutes. */
const LATENESS_BUCKETS = [
  0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600,
];
/** 1 ms to an hour: a free slot is taken within a tick, a paused type may wait for an operator. */
const LIMIT_WAIT_BUCKETS = [
  0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600,
];
const CLAIM_SIZE_BUCKETS = [1, 2, 5, 10, 20, 50, 100];
const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Every metric the app exposes, on a registry of its own (not prom-client's
 * global one: two apps in one process, as in tests, do not share counters).
 * Counters are this instance's, kept in memory, as Prometheus expects: the
 * sum over instances is the query's job. No metric is read from a table
 * during a scrape: the few that come from one (LimitGauges) are read on a
 * timer of their own and kept.
 */
@Injectable()
export class Metrics {
  readonly registry = new Registry();

  readonly scheduled = this.counter('delay_tasks_scheduled_total', 'Tasks scheduled', ['type']);
  readonly executed = this.counter('delay_tasks_executed_total', 'Tasks executed', ['type']);
  readonly failed = this.counter(
    'delay_tasks_failed_total',
    'Attempts that failed and were retried',
    ['type'],
  );
  readonly deadLettered = this.counter(
    'delay_tasks_dead_lettered_total',
    'Tasks dead-lettered (out of attempts, discarded, or without a handler)',
    ['type'],
  );
  readonly cancelled = this.counter('delay_tasks_cancelled_total', 'Tasks cancelled', ['type']);
  readonly snoozed = this.counter(
    'delay_tasks_snoozed_total',
    'Attempts snoozed by their handler',
    ['type'],
  );
  readonly lateness = new Histogram({
    name: 'delay_task_lateness_seconds',
    help: "Claim time minus due time of executed tasks, less any wait behind their type's shared limit or pause (the engine's own lateness)",
    labelNames: ['type'],
    buckets: LATENESS_BUCKETS,
    registers: [this.registry],
  });
  readonly limitWait = new Histogram({
    name: 'delay_limit_wait_seconds',
    help: "How long executed tasks waited behind their type's shared limit or pause (types whose tasks waited since start)",
    labelNames: ['type'],
    buckets: LIMIT_WAIT_BUCKETS,
    registers: [this.registry],
  });
  readonly claimSize = new Histogram({
    name: 'delay_claim_batch_size',
    help: 'Tasks claimed per claim transaction',
    buckets: CLAIM_SIZE_BUCKETS,
    registers: [this.registry],
  });
  readonly claimDuration = new Histogram({
    name: 'delay_claim_duration_seconds',
    help: 'Claim transaction wall time, handlers and commit included',
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });
  readonly httpRequests = this.counter('http_requests_total', 'HTTP requests answered', [
    'method',
    'route',
    'status',
  ]);
  readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration, to the last byte of the response',
    labelNames: ['method', 'route', 'status'],
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /** A gauge whose value is read at scrape time. */
  gauge(name: string, help: string, labelNames: string[], collect: (gauge: Gauge) => void): Gauge {
    return new Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      collect() {
        collect(this);
      },
    });
  }

  /** A counter whose total is kept elsewhere (the engine's memory) and read at scrape time. */
  counted(
    name: string,
    help: string,
    labelNames: string[],
    collect: (counter: Counter) => void,
  ): Counter {
    return new Counter({
      name,
      help,
      labelNames,
      registers: [this.registry],
      collect() {
        collect(this);
      },
    });
  }

  private counter(name: string, help: string, labelNames: string[]): Counter {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }
}
