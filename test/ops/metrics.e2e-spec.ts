import { EventEmitter2 } from '@nestjs/event-emitter';
import { DelayLimits, DelaySchedules, DelayService } from 'nest-delay';
import { DataSource } from 'typeorm';
import { LimitGauges } from '../../src/ops/metrics/limit-gauges.js';
import { MINUTE, useOrdersApp, type OrdersApi } from '../orders/orders-api.js';

/** The value of one sample line of a scrape, `name{labels} value`; undefined if absent. */
function sample(scrape: string, name: string, labels: Record<string, string> = {}) {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of scrape.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = match[2] ? match[2].split(',') : [];
    if (wanted.every((label) => have.includes(label))) return Number(match[3]);
  }
  return undefined;
}

async function scrape(api: OrdersApi): Promise<string> {
  const res = await api.http().get('/metrics').expect(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain/);
  return res.text;
}

describe('/metrics', () => {
  // Counts of the orders' own tasks, without the Idempotency-Key purge's.
  const ctx = useOrdersApp({ ORDER_IDEMPOTENCY_PURGE_EVERY: 'off' });

  it('counts tasks scheduled and executed by type, with their lateness and claims', async () => {
    const { api } = ctx;
    const before = await scrape(api);
    const scheduled0 =
      sample(before, 'delay_tasks_scheduled_total', { type: 'order.close-unpaid' }) ?? 0;
    await api.createOrder();
    await api.createOrder();
    let text = await scrape(api);
    expect(sample(text, 'delay_tasks_scheduled_total', { type: 'order.close-unpaid' })).toBe(
      scheduled0 + 2,
    );
    expect(sample(text, 'delay_wheel_tasks')).toBe(2);

    // The payment timeout passes: both close at their due time (advance walks
    // its span in due order), and the customer notifications they schedule run.
    await api.advanceAndLoad(30 * MINUTE + 1000);
    text = await scrape(api);
    expect(sample(text, 'delay_tasks_executed_total', { type: 'order.close-unpaid' })).toBe(2);
    expect(sample(text, 'delay_task_lateness_seconds_count', { type: 'order.close-unpaid' })).toBe(
      2,
    );
    // Lateness buckets: both under 0.5 s.
    expect(
      sample(text, 'delay_task_lateness_seconds_bucket', { type: 'order.close-unpaid', le: '0.5' }),
    ).toBe(2);
    expect(
      sample(text, 'delay_task_lateness_seconds_bucket', { type: 'order.close-unpaid', le: '2.5' }),
    ).toBe(2);
    // Each task in one claim: two closes, two notifications.
    expect(sample(text, 'delay_claim_batch_size_sum')).toBe(4);
    expect(sample(text, 'delay_claim_duration_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'delay_wheel_tasks')).toBe(0);
  });

  it('counts cancelled and dead-lettered tasks', async () => {
    const { api, t } = ctx;
    const order = await api.createOrder();
    await api.action(order.id, 'cancel').expect(200);
    // A payload no retry can fix: the handler dead-letters it at once.
    await t.app
      .get(DelayService)
      .schedule({ type: 'order.close-unpaid', payload: { orderId: 'nope' }, delay: 0 });
    await t.delay.runDue();
    const text = await scrape(api);
    expect(sample(text, 'delay_tasks_cancelled_total', { type: 'order.close-unpaid' })).toBe(1);
    expect(sample(text, 'delay_tasks_dead_lettered_total', { type: 'order.close-unpaid' })).toBe(1);
  });

  it('counts HTTP requests by route template and status, and has the process metrics', async () => {
    const { api } = ctx;
    await api.as('user-1').get('/orders/00000000-0000-4000-8000-000000000000').expect(404);
    await api.as('user-1').get('/orders/not-a-uuid').expect(400);
    await api.http().get('/no/such/route').expect(404);
    const text = await scrape(api);
    expect(
      sample(text, 'http_requests_total', { method: 'GET', route: '/orders/:id', status: '404' }),
    ).toBe(1);
    expect(
      sample(text, 'http_requests_total', { method: 'GET', route: '/orders/:id', status: '400' }),
    ).toBe(1);
    expect(
      sample(text, 'http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }),
    ).toBe(1);
    expect(
      sample(text, 'http_request_duration_seconds_count', { route: '/orders/:id', status: '404' }),
    ).toBe(1);
    expect(sample(text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(sample(text, 'nodejs_eventloop_lag_seconds')).toBeDefined();
    expect(sample(text, 'delay_lease_live')).toBe(1);
    expect(sample(text, 'delay_runtime_running')).toBe(1);
  });

  it('scrapes without a single query, however many rows delayed_task holds', async () => {
    const { api, t } = ctx;
    await api.query(
      `INSERT INTO delayed_task (type, payload, due_at, executed_at, created_at, updated_at)
       SELECT 'bulk.row', 'null'::jsonb, now(), now(), now(), now() FROM generate_series(1, 20000)`,
    );
    // Every statement the app sends goes through its pool: count them during a scrape.
    const pool = (t.app.get(DataSource).driver as unknown as { master: any }).master;
    const sent: string[] = [];
    const query = pool.query;
    const connect = pool.connect;
    pool.query = function (this: unknown, ...args: any[]) {
      sent.push(String(args[0]?.text ?? args[0]));
      return query.apply(this, args);
    };
    pool.connect = function (this: unknown, ...args: any[]) {
      sent.push('connect');
      return connect.apply(this, args);
    };
    try {
      const text = await scrape(api);
      expect(text).toContain('delay_tasks_executed_total');
    } finally {
      pool.query = query;
      pool.connect = connect;
    }
    expect(sent).toEqual([]);
  });
});

describe('/metrics off', () => {
  const ctx = useOrdersApp({ METRICS_ENABLED: 'false', EVENTS_ENABLED: 'false' });

  it('is not served, and orders and their tasks work the same', async () => {
    const { api } = ctx;
    await api.http().get('/metrics').expect(404);
    const order = await api.createOrder();
    await api.advance(31 * MINUTE);
    expect((await api.get(order.id)).status).toBe('CLOSED');
  });
});

describe('/metrics with events off', () => {
  const ctx = useOrdersApp({ EVENTS_ENABLED: 'false' });

  it('still counts tasks (metrics observe the engine directly), and emits no event', async () => {
    const { api, t } = ctx;
    const emitted: string[] = [];
    const emitter = t.app.get(EventEmitter2);
    emitter.on('delay.task.executed', () => emitted.push('delay.task.executed'));
    emitter.on('order.created', () => emitted.push('order.created'));
    await api.createOrder();
    await api.advance(31 * MINUTE);
    const text = await scrape(api);
    expect(sample(text, 'delay_tasks_executed_total', { type: 'order.close-unpaid' })).toBe(1);
    expect(emitted).toEqual([]);
  });
});

describe('/metrics of recurring schedules', () => {
  const ctx = useOrdersApp();

  it('counts occurrences planned and missed; the runs are the task metrics of their type', async () => {
    const { api, t } = ctx;
    const type = 'orders.purge-idempotency-keys';
    const schedules = t.app.get(DelaySchedules);
    await api.advance(10 * MINUTE);
    let text = await scrape(api);
    // 00:00 and 00:10 ran; planned an hour ahead of each.
    expect(sample(text, 'delay_tasks_executed_total', { type })).toBe(2);
    const planned = sample(text, 'delay_schedule_occurrences_planned_total')!;
    expect(planned).toBeGreaterThanOrEqual(7);
    expect(sample(text, 'delay_schedule_occurrences_missed_total')).toBe(0);

    // Paused from 00:10 to 00:45: 00:20, 00:30 and 00:40 missed; catch-up 'one' runs 00:40.
    await schedules.pause(type);
    await api.advance(35 * MINUTE);
    await schedules.resume(type);
    await t.delay.runDue();
    text = await scrape(api);
    expect(sample(text, 'delay_schedule_occurrences_missed_total')).toBe(2);
    expect(sample(text, 'delay_tasks_executed_total', { type })).toBe(3);
    expect(sample(text, 'delay_schedule_occurrences_planned_total')).toBeGreaterThan(planned);
  });
});

describe('/metrics of shared limits', () => {
  const ctx = useOrdersApp({ ORDER_IDEMPOTENCY_PURGE_EVERY: 'off' });
  const CLOSE = 'order.close-unpaid';
  /** The order task with a shared limit (a rate): the customer notification. */
  const NOTIFY = 'order.notify-closed';

  it('gauges what waits behind a pause, and times the wait apart from lateness', async () => {
    const { api, t } = ctx;
    const limits = t.app.get(DelayLimits);
    const gauges = t.app.get(LimitGauges);
    const instanceId = t.app.get(DelayService).stats().instanceId;
    let text = await scrape(api);
    // Read at start: the one limited order type has nothing waiting; the closes,
    // unlimited and running, are no wait behind a limit; nothing paused.
    expect(sample(text, 'delay_limit_waiting_tasks', { type: NOTIFY })).toBe(0);
    expect(sample(text, 'delay_limit_waiting_tasks', { type: CLOSE })).toBeUndefined();
    expect(sample(text, 'delay_type_paused', { type: NOTIFY })).toBe(0);
    expect(sample(text, 'delay_type_paused', { type: CLOSE })).toBe(0);

    for (let i = 0; i < 3; i++) await api.createOrder();
    await limits.pause(NOTIFY);
    // Closed at 30 min: their notifications fall due and wait, held here, for 45 s.
    await api.advanceAndLoad(30 * MINUTE + 1000);
    await gauges.read();
    text = await scrape(api);
    expect(sample(text, 'delay_tasks_executed_total', { type: CLOSE })).toBe(3);
    expect(sample(text, 'delay_limit_waiting_tasks', { type: NOTIFY })).toBe(3);
    expect(
      sample(text, 'delay_limit_waiting_here_tasks', { type: NOTIFY, instance_id: instanceId }),
    ).toBe(3);
    expect(sample(text, 'delay_type_paused', { type: NOTIFY })).toBe(1);
    expect(sample(text, 'delay_tasks_executed_total', { type: NOTIFY })).toBeUndefined();

    await api.advance(45_000);
    await limits.resume(NOTIFY);
    await t.delay.runDue();
    // The timer reads again within 15 s of the app's clock.
    await api.advance(15_000);
    await gauges.read();
    text = await scrape(api);
    expect(sample(text, 'delay_tasks_executed_total', { type: NOTIFY })).toBe(3);
    expect(sample(text, 'delay_limit_waiting_tasks', { type: NOTIFY })).toBe(0);
    expect(sample(text, 'delay_type_paused', { type: NOTIFY })).toBe(0);
    // 45 s behind the pause: in the limit wait, not in the lateness (a tick at most).
    expect(sample(text, 'delay_limit_wait_seconds_count', { type: NOTIFY })).toBe(3);
    expect(sample(text, 'delay_limit_wait_seconds_bucket', { type: NOTIFY, le: '30' })).toBe(0);
    expect(sample(text, 'delay_limit_wait_seconds_bucket', { type: NOTIFY, le: '60' })).toBe(3);
    expect(sample(text, 'delay_task_lateness_seconds_bucket', { type: NOTIFY, le: '2.5' })).toBe(3);
    // A type none of whose tasks waited has no limit wait series.
    expect(sample(text, 'delay_limit_wait_seconds_count', { type: CLOSE })).toBeUndefined();
  });

  it('reads the limits on a timer of the app clock, never during a scrape', async () => {
    const { api, t } = ctx;
    const limits = t.app.get(DelayLimits);
    await limits.pause('order.auto-review');
    // Not read yet: the scrape serves the last read.
    expect(sample(await scrape(api), 'delay_type_paused', { type: 'order.auto-review' })).toBe(0);
    // 15 s on the app's clock: the timer reads, and a later scrape shows it.
    await api.advance(15_000);
    let paused: number | undefined;
    for (let tries = 0; tries < 500 && paused !== 1; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      paused = sample(await scrape(api), 'delay_type_paused', { type: 'order.auto-review' });
    }
    expect(paused).toBe(1);
    await limits.resume('order.auto-review');
  });
});
