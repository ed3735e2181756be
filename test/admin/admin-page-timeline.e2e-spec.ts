import { context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { Browser, Page } from 'playwright-core';
import { ManualClock } from 'nest-delay/testing';
import {
  ARTIFACTS,
  describeInChromium,
  errorsOf,
  launchChromium,
  listen,
  newPage,
  signIn,
  textOf,
} from './admin-browser.js';
import { ADMIN_TOKEN, FLAKY_TYPE, TEST_TYPE, useAdminTestApp } from './admin-test-app.js';
import { bearer } from '../support/auth.js';

// The order timeline on the live page, in Chromium, against the real app on
// a ManualClock: an order is found by the link its JSON carries, its steps
// are read off the page, and another order's tasks are cancelled from it.
const provider = new NodeTracerProvider({
  spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter())],
});
const tracer = trace.getTracer('admin-page-timeline-test');
beforeAll(() => provider.register());
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
});

describeInChromium('admin page timeline browser test')('the order timeline on the page', () => {
  const ctx = useAdminTestApp(
    { ADMIN_TOKEN, DELAY_INSTANCE_ID: 'orders-eu-1' },
    { clock: new ManualClock(Date.parse('2026-11-25T09:00:00.000Z')) },
  );
  let browser: Browser;
  let base = '';

  beforeAll(async () => {
    base = await listen(ctx.t.app);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  const createOrder = async (): Promise<{ id: string; links: Record<string, string> }> =>
    (
      await ctx.t
        .http()
        .post('/orders')
        .set('Authorization', bearer('user-7'))
        .send({ userId: 'user-7', amountCents: 4200 })
        .expect(201)
    ).body;
  /** The step rows of one task, as the page shows them: [step, attempt, instance, trace id]. */
  const stepsOf = (page: Page, taskId: string) =>
    page.$$eval(`#timeline-steps tbody tr[data-task="${taskId}"]`, (rows) =>
      rows.map((row) => {
        const cells = [...row.querySelectorAll('td')].map((td) => td.textContent!.trim());
        return [cells[2], cells[3], cells[4], cells[7]];
      }),
    );

  it("shows an order's flaky task step by step, with its instance and trace id, from the order's link", async () => {
    const { t } = ctx;
    const order = await createOrder();
    const entity = `order:${order.id}`;
    expect(order.links).toEqual({
      history: `/orders/${order.id}/history`,
      timeline: `/admin/api/entities/${entity}/timeline`,
      timelinePage: `/admin#/timeline?entity=${entity}`,
    });
    const { task, traceId } = await tracer.startActiveSpan(
      'POST /orders/:id/ship',
      async (span) => {
        const scheduled = await t.delay.schedule({
          type: FLAKY_TYPE,
          entity,
          delay: '1m',
          maxAttempts: 3,
        });
        span.end();
        return { task: scheduled, traceId: span.spanContext().traceId };
      },
    );
    await t.tester.advance('1m'); // its first run fails: retried in about a second
    expect(t.runs.flakyRuns.get(task.id)).toBe(1);
    await t.tester.advance('2s'); // the retry snoozes for 5 minutes
    expect(t.runs.flakyRuns.get(task.id)).toBe(2);
    await t.tester.advance('5m'); // and then it completes
    expect(t.runs.flakyRuns.get(task.id)).toBe(3);
    const close = (await t.delay.get({ key: `order:${order.id}:close-unpaid` }))!;

    const page = await newPage(browser);
    await signIn(page, base);
    await page.goto(`${base}${order.links.timelinePage}`);
    await page.waitForSelector(
      `#timeline-steps tbody tr[data-task="${task.id}"][data-event="executed"]`,
    );
    expect(await page.inputValue('#timeline-query')).toBe(entity);
    expect(await textOf(page, '#timeline-title')).toBe(entity);
    expect(await stepsOf(page, task.id)).toEqual([
      ['scheduled', '–', '–', traceId],
      ['started', '1', 'orders-eu-1', traceId],
      ['retried', '1', 'orders-eu-1', traceId],
      ['started', '2', 'orders-eu-1', traceId],
      ['snoozed', '2', 'orders-eu-1', traceId],
      ['started', '2', 'orders-eu-1', traceId],
      ['executed', '2', 'orders-eu-1', traceId],
    ]);
    expect(
      await textOf(page, `#timeline-steps tbody tr[data-task="${task.id}"][data-event="retried"]`),
    ).toContain('Error: the payment provider timed out');
    // The close is still due, at its exact time.
    expect(await textOf(page, `#timeline-due tbody tr[data-task="${close.id}"]`)).toContain(
      '2026-11-25 09:30:00.000',
    );
    expect(await textOf(page, '#timeline-retention')).toContain('no longer knows');
    await page.screenshot({ path: `${ARTIFACTS}/admin-timeline.png`, fullPage: true });
    expect(errorsOf(page)).toEqual([]);
    await page.close();
  });

  it("cancels another order's pending tasks from the page, after a move it refused", async () => {
    const { t } = ctx;
    const order = await createOrder();
    const entity = `order:${order.id}`;
    const extra = await t.delay.schedule({ type: TEST_TYPE, entity, delay: '1h' });
    const close = (await t.delay.get({ key: `order:${order.id}:close-unpaid` }))!;

    const page = await newPage(browser);
    await signIn(page, base);
    await page.click('#nav a[data-view="timeline"]');
    // An order's id alone is read as its entity, in whatever case it was pasted.
    await page.fill('#timeline-query', order.id.toUpperCase());
    await page.click('#timeline-search button[type=submit]');
    await page.waitForSelector(`#timeline-due tbody tr[data-task="${extra.id}"]`);
    expect(await textOf(page, '#timeline-title')).toBe(entity);
    expect(await page.locator('#timeline-due tbody tr').count()).toBe(2);

    await page.fill('#entity-move-by', 'soon');
    await page.click('#entity-move-button');
    await page.waitForSelector('#timeline-result.bad');
    expect(await textOf(page, '#timeline-result')).toMatch(/^Refused \(400, field by\): .*soon/);

    await page.click('#entity-cancel');
    await page.waitForSelector('#timeline-result.good');
    expect(await textOf(page, '#timeline-result')).toBe(
      `Cancelled 2 task(s) (order.close-unpaid 1, ${TEST_TYPE} 1: #${close.id}, #${extra.id}) of ${entity}.`,
    );
    await page.waitForSelector('#timeline-due >> text=Nothing is due.');
    expect(await page.locator('#timeline-steps tbody tr[data-event="cancelled"]').count()).toBe(2);
    expect(await page.locator('#timeline-tasks .pill.state-cancelled').count()).toBe(2);
    expect(await page.locator('#entity-cancel').isDisabled()).toBe(true);
    for (const id of [close.id, extra.id])
      expect((await t.delay.get({ id }))?.state).toBe('cancelled');
    await page.screenshot({ path: `${ARTIFACTS}/admin-timeline-cancelled.png`, fullPage: true });
    expect(errorsOf(page)).toEqual([]);
    await page.close();
  });
});
