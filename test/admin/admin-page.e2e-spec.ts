import type { Browser, Page } from 'playwright-core';
import { DelaySchedules } from 'nest-delay';
import { ManualClock } from 'nest-delay/testing';
import {
  ARTIFACTS,
  describeInChromium,
  errorsOf,
  launchChromium,
  listen,
  newPage as openPage,
  textOf as text,
} from './admin-browser.js';
import { ADMIN_TOKEN, LIMITED_TYPE, TEST_TYPE, useAdminTestApp } from './admin-test-app.js';

// The live page in a real browser: Debian's chromium driven by playwright-core,
// against the real app on the ManualClock, so the page changes exactly when
// the test moves time (the stream's snapshots come every 2 s by that clock).

describe('the admin page shell', () => {
  const ctx = useAdminTestApp({ ADMIN_TOKEN });

  it('is served without the token, holds no data, and allows only its own scripts', async () => {
    const res = await ctx.t.http().get('/admin').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.text).toContain('<script type="module" src="/admin/assets/main.js"></script>');
    expect(res.text).not.toMatch(/<script(?![^>]*\bsrc=)/);
    const csp = res.headers['content-security-policy'];
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("'unsafe-eval'");
    const script = await ctx.t.http().get('/admin/assets/main.js').expect(200);
    expect(script.headers['content-type']).toMatch(/^text\/javascript/);
    const css = await ctx.t.http().get('/admin/assets/admin.css').expect(200);
    expect(css.headers['content-type']).toMatch(/^text\/css/);
  });

  it('serves nothing but the files of the page', async () => {
    await ctx.t.http().get('/admin/assets/nope.js').expect(404);
    await ctx.t.http().get('/admin/assets/..%2Fadmin.module.ts').expect(404);
    await ctx.t.http().get('/admin/assets/index.html').expect(404);
  });
});

describeInChromium('admin page browser test')('the admin page in Chromium', () => {
  // 120 one-second slots: a two-minute ring, cut into 60 regions of 2 slots.
  // The manual clock starts at the real time, so the instance's clock offset reads true.
  const ctx = useAdminTestApp(
    { ADMIN_TOKEN, DELAY_WHEEL_SLOTS: '120', DELAY_MAX_ATTEMPTS: '1' },
    { clock: new ManualClock(Date.now()) },
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

  const newPage = (): Promise<Page> => openPage(browser);
  const countOf = (page: Page, state: string) =>
    page.locator(`#state-cards [data-state="${state}"] .value`).getAttribute('data-count');
  /** Waits until the card of `state` shows `count`: the page updated itself. */
  const untilCount = (page: Page, state: string, count: number) =>
    page.waitForSelector(`#state-cards [data-state="${state}"] .value[data-count="${count}"]`);

  it('says so when the token is wrong, then logs in and follows tasks as they fire', async () => {
    const { t } = ctx;
    // Spread over the ring: some soon, most later this turn, a few beyond the window.
    for (let i = 0; i < 60; i++) {
      await t.delay.schedule({
        type: TEST_TYPE,
        key: `order:${1000 + i}`,
        payload: { order: 1000 + i },
        delay: `${2 + ((i * 37) % 110)}s`,
      });
    }
    for (let i = 0; i < 12; i++) {
      await t.delay.schedule({ type: 'admin.test', key: `later:${i}`, delay: `${5 + i}m` });
    }
    for (let i = 0; i < 3; i++) {
      await t.delay.schedule({
        type: TEST_TYPE,
        key: `payment:${i}`,
        payload: { fail: true },
        delay: '3s',
      });
    }

    const page = await newPage();
    await page.goto(`${base}/admin`);
    await page.fill('#token', 'not-the-token-at-all-0000000000000000');
    await page.click('#login-form button[type=submit]');
    await page.waitForSelector('#login-error:not([hidden])');
    expect(await text(page, '#login-error')).toMatch(/Wrong token/);
    await page.screenshot({ path: `${ARTIFACTS}/admin-login-wrong-token.png` });

    await page.fill('#token', ADMIN_TOKEN);
    await page.click('#login-form button[type=submit]');
    await untilCount(page, 'pending', 75);
    expect(await countOf(page, 'executed')).toBe('0');
    expect(await page.evaluate('sessionStorage.length')).toBe(1);

    // Time moves on the server; the page hears of it through the stream alone.
    for (let step = 0; step < 12; step++) await t.tester.advance('2s');
    // Counts are computed at most once per 5 s of the app's clock: a snapshot
    // the stream took during the last steps stays current while this test's
    // clock stands still, so let those 5 s pass.
    await t.tester.advance('5s');
    const executed = (await t.get('/admin/api/tasks?state=executed&limit=1000').expect(200)).body
      .items.length;
    expect(executed).toBeGreaterThan(0);
    await untilCount(page, 'executed', executed);
    await untilCount(page, 'dead', 3);
    expect(Number(await countOf(page, 'pending'))).toBe(75 - executed - 3);
    expect(await text(page, '#nav-dead-count')).toBe('3');
    expect(await text(page, '#lateness-p50')).toMatch(/≤/);
    expect(await page.locator('#wheel-ring path.region.full').count()).toBeGreaterThan(0);
    expect(await page.locator('#instances tbody tr').count()).toBe(1);
    // Each count in the types table opens those tasks.
    expect(await text(page, `#types a[href="#/tasks?state=dead&type=${TEST_TYPE}"]`)).toBe('3');
    await page.screenshot({ path: `${ARTIFACTS}/admin-overview.png`, fullPage: true });
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.screenshot({ path: `${ARTIFACTS}/admin-overview-dark.png`, fullPage: true });
    await page.emulateMedia({ colorScheme: 'light' });

    // Dead letters are one click from the overview.
    await page.click('#state-cards [data-state="dead"]');
    await page.locator('#tasks tbody tr').nth(2).waitFor();
    expect(await page.locator('#tasks tbody tr .pill.state-dead').count()).toBe(3);
    const deadId = await page.locator('#tasks tbody tr').first().getAttribute('data-id');
    await page.click(`#tasks tbody tr[data-id="${deadId}"]`);
    await page.waitForSelector('#last-error');
    expect(await text(page, '#last-error')).toContain(`planned failure of task ${deadId}`);
    await page.screenshot({ path: `${ARTIFACTS}/admin-dead-letter.png`, fullPage: true });

    // The fix is out: retry it from the page and see it run.
    t.runs.healed.add(deadId!);
    await page.click('#details button[data-action="Retry"]');
    await page.waitForSelector('#banner.good');
    expect(await text(page, '#banner')).toContain(`Task ${deadId} is pending again`);
    await page.waitForSelector('#details .pill.state-pending');
    await t.tester.advance('2s');
    await page.waitForSelector('#details .pill.state-executed');
    expect(t.runs.ran.filter((id) => id === deadId)).toHaveLength(2);
    expect((await t.get(`/admin/api/tasks/${deadId}`).expect(200)).body.task.state).toBe(
      'executed',
    );
    await page.screenshot({ path: `${ARTIFACTS}/admin-retried.png`, fullPage: true });
    expect(errorsOf(page)).toEqual([]);
    await page.close();
  });

  it('says the server cannot be reached, and gets there by itself once it can', async () => {
    const page = await newPage();
    await page.route('**/admin/api/**', (route) => route.abort('connectionrefused'));
    await page.goto(`${base}/admin`);
    await page.fill('#token', ADMIN_TOKEN);
    await page.click('#login-form button[type=submit]');
    await page.waitForSelector('#banner:not([hidden])');
    expect(await text(page, '#banner')).toMatch(/cannot be reached.*Trying again/);
    await page.screenshot({ path: `${ARTIFACTS}/admin-unreachable.png` });
    await page.unroute('**/admin/api/**');
    await page.waitForSelector('#state-cards [data-state="pending"]');
    expect(await page.locator('#banner').isHidden()).toBe(true);
    expect(errorsOf(page)).toEqual([]);
    await page.close();
  });

  it('lists the schedules, and pauses and resumes one from its row', async () => {
    const { t } = ctx;
    await t.app
      .get(DelaySchedules)
      .upsert('reports.every-minute', { type: TEST_TYPE, every: '1m' });
    const page = await newPage();
    await page.goto(`${base}/admin`);
    await page.fill('#token', ADMIN_TOKEN);
    await page.click('#login-form button[type=submit]');
    const row = '#schedules tr[data-schedule="reports.every-minute"]';
    await page.waitForSelector(row);
    expect(await text(page, `${row} td:nth-child(2)`)).toBe('every 1m 00s');
    // Its next occurrence: ahead ("in 42s"), or "now" when the page is read at
    // the minute its occurrence falls due and before that one has run.
    expect(await text(page, `${row} td:nth-child(3)`)).toMatch(/^(in |now$)/);

    await page.click(`${row} button[data-action="pause"]`);
    await page.waitForSelector('#banner.good');
    expect(await text(page, '#banner')).toContain('Schedule reports.every-minute paused');
    await page.waitForSelector(`${row} button[data-action="resume"]`);
    expect(await text(page, `${row} td:nth-child(3)`)).toBe('paused');
    expect((await t.get('/admin/api/schedules').expect(200)).body[0]).toMatchObject({
      name: 'reports.every-minute',
      paused: true,
    });

    await page.click(`${row} button[data-action="resume"]`);
    await page.waitForSelector(`${row} button[data-action="pause"]`);
    expect(await text(page, '#banner')).toContain('Schedule reports.every-minute resumed');
    await page.screenshot({ path: `${ARTIFACTS}/admin-schedules.png`, fullPage: true });
    expect(errorsOf(page)).toEqual([]);
    await page.close();
  });

  it('lists the task types with their limits, pauses and resumes one from its row, and shows how long its tasks waited', async () => {
    const { t } = ctx;
    const page = await newPage();
    await page.goto(`${base}/admin`);
    await page.fill('#token', ADMIN_TOKEN);
    await page.click('#login-form button[type=submit]');
    const row = `#task-types tr[data-type="${LIMITED_TYPE}"]`;
    await page.waitForSelector(row);
    expect(await text(page, `${row} td:nth-child(2)`)).toMatch(
      /^2 at once · 50 per 1\.0 s\s*per key$/,
    );
    expect(await text(page, `${row} td:nth-child(3)`)).toBe('running');
    // The app's own (the defaults): close-unpaid and auto-review unlimited, the notification 20 a second.
    expect(await text(page, '#task-types tr[data-type="order.close-unpaid"] td:nth-child(2)')).toBe(
      'unlimited',
    );
    expect(await text(page, '#task-types tr[data-type="order.auto-review"] td:nth-child(2)')).toBe(
      'unlimited',
    );
    expect(
      await text(page, '#task-types tr[data-type="order.notify-closed"] td:nth-child(2)'),
    ).toBe('20 per 1.0 s');

    await page.click(`${row} button[data-action="pause"]`);
    await page.waitForSelector('#banner.good');
    expect(await text(page, '#banner')).toContain(
      `Task type ${LIMITED_TYPE} paused on every instance`,
    );
    await page.waitForSelector(`${row} button[data-action="resume"]`);
    expect(await text(page, `${row} td:nth-child(3)`)).toMatch(/^paused/);
    expect((await t.get('/admin/api/types').expect(200)).body).toContainEqual(
      expect.objectContaining({ type: LIMITED_TYPE, paused: true }),
    );

    // Three of its tasks fall due while it is paused: they wait, here, and the next snapshots say so.
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const task = await t.delay.schedule({
        type: LIMITED_TYPE,
        payload: { merchant: `m${i}` },
        delay: `${1 + i}s`,
      });
      ids.push(task.id);
    }
    for (let step = 0; step < 5; step++) await t.tester.advance('2s');
    await page.waitForSelector(`${row} td:nth-child(4) >> text="3"`);
    expect(await text(page, `${row} td:nth-child(5)`)).toBe('3');
    expect(t.runs.limitedRan).toEqual([]);

    await page.click(`${row} button[data-action="resume"]`);
    await page.waitForSelector(`${row} button[data-action="pause"]`);
    expect(await text(page, '#banner')).toContain(`Task type ${LIMITED_TYPE} resumed`);
    await t.tester.runDue();
    expect([...t.runs.limitedRan].sort()).toEqual([...ids].sort());
    // The next snapshot has their waits (7 to 9 s behind the pause), apart from lateness.
    await t.tester.advance('2s');
    await page.waitForSelector(`${row} td:nth-child(6) >> text=/^p90 ≤ 10 s/`);
    expect(await text(page, `${row} td:nth-child(4)`)).toBe('0');

    // For the README: one type paused with tasks waiting, one that waited behind its pause.
    await t.post(`/admin/api/types/${TEST_TYPE}/pause`).expect(200);
    for (let i = 0; i < 4; i++) await t.delay.schedule({ type: TEST_TYPE, delay: '1s' });
    const paused = `#task-types tr[data-type="${TEST_TYPE}"]`;
    await page.waitForSelector(`${paused} button[data-action="resume"]`);
    // A snapshot taken once they are held here (tasks of the first test keep falling due
    // meanwhile: those count as waiting at once, and as held here once claimed).
    await t.tester.advance('2s');
    await t.tester.advance('2s');
    // Polled from here: the page's CSP forbids the eval a string predicate needs.
    const held = page.locator(`${paused} td`).nth(4);
    for (let deadline = Date.now() + 30_000; Number(await held.innerText()) < 4;) {
      if (Date.now() > deadline) throw new Error('the paused type never showed 4 tasks held');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await page
      .locator('#task-types-card')
      .screenshot({ path: `${ARTIFACTS}/admin-task-types.png` });
    await page.screenshot({ path: `${ARTIFACTS}/admin-types.png`, fullPage: true });
    await t.post(`/admin/api/types/${TEST_TYPE}/resume`).expect(200);
    await t.tester.runDue();
    expect(errorsOf(page)).toEqual([]);
    await page.close();
  });
});
