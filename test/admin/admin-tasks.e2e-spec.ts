import type { TaskState } from 'nest-delay';
import { CapturingLogger } from '../delay/delay-test-app.js';
import { ADMIN_TOKEN, TEST_TYPE, useAdminTestApp, type AdminTestApp } from './admin-test-app.js';

const logger = new CapturingLogger();
const ctx = useAdminTestApp({ ADMIN_TOKEN }, { logger });

interface Seed {
  type?: string;
  key?: string;
  /** A timestamptz literal: microseconds are kept. */
  dueAt: string;
  state?: TaskState;
  payload?: unknown;
}

/** Rows written straight into the table (as another producer would), in order; their ids. */
async function seed(t: AdminTestApp, rows: Seed[]): Promise<string[]> {
  const ids: string[] = [];
  for (const row of rows) {
    const state = row.state ?? 'pending';
    const at = (s: TaskState) => (state === s ? '2026-01-01T00:00:00Z' : null);
    const [{ id }] = await t.query<{ id: string }>(
      `INSERT INTO delayed_task (type, key, payload, due_at, executed_at, cancelled_at, dead_at,
                                 attempts, last_error, created_at, updated_at)
       VALUES ($1, $2, $3, $4::timestamptz, $5, $6, $7, $8, $9, now(), now()) RETURNING id`,
      [
        row.type ?? TEST_TYPE,
        row.key ?? null,
        JSON.stringify(row.payload ?? null),
        row.dueAt,
        at('executed'),
        at('cancelled'),
        at('dead'),
        state === 'dead' ? 5 : 0,
        state === 'dead' ? 'Error: it broke' : null,
      ],
    );
    ids.push(id);
  }
  return ids;
}

/** Every page of a listing, following nextCursor; `between` runs after the first page. */
async function allPages(t: AdminTestApp, query: string, between?: () => Promise<void>) {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const url: string = `/admin/api/tasks?${query}${cursor ? `&cursor=${cursor}` : ''}`;
    const res = await t.get(url).expect(200);
    ids.push(...res.body.items.map((task: { id: string }) => task.id));
    cursor = res.body.nextCursor;
    if (++pages === 1) await between?.();
  } while (cursor !== null);
  return { ids, pages };
}

describe('listing tasks', () => {
  it('pages in (due time, id) order with an opaque cursor: no duplicates, no gaps, stable while rows arrive', async () => {
    const { t } = ctx;
    // Equal due times (ties broken by id) and microseconds a JS Date cannot hold.
    const due = [
      '2027-03-01 10:00:00.000001+00',
      '2027-03-01 10:00:00.000002+00',
      '2027-03-01 10:00:00.000001+00',
      '2027-03-01 09:00:00+00',
      '2027-03-01 10:00:00.000002+00',
    ];
    await seed(
      t,
      Array.from({ length: 23 }, (_, i) => ({ key: `page:${i}`, dueAt: due[i % due.length] })),
    );
    const [{ ids: expected }] = await t.query<{ ids: string[] }>(
      `SELECT array_agg(id::text ORDER BY due_at, id) AS ids FROM delayed_task WHERE key LIKE 'page:%'`,
    );
    let early = '';
    let late = '';
    const { ids, pages } = await allPages(t, 'keyPrefix=page:&limit=4', async () => {
      // One task sorting before the first page's end (already passed: not listed), one after it (listed).
      [early] = await seed(t, [{ key: 'page:early', dueAt: '2027-03-01 08:00:00+00' }]);
      [late] = await seed(t, [{ key: 'page:late', dueAt: '2027-03-01 11:00:00+00' }]);
    });
    expect(pages).toBe(6);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual([...expected, late]);
    expect(ids).not.toContain(early);
  });

  it('filters by state, type, key, key prefix and due range, each narrowing', async () => {
    const { t } = ctx;
    const [pending, executed, dead, cancelled, other, later] = await seed(t, [
      { key: 'filter:a', dueAt: '2027-04-01T00:00:00Z' },
      { key: 'filter:b', dueAt: '2027-04-01T00:00:00Z', state: 'executed' },
      { key: 'filter:c', dueAt: '2027-04-02T00:00:00Z', state: 'dead' },
      { key: 'filter:d', dueAt: '2027-04-02T00:00:00Z', state: 'cancelled' },
      { key: 'filter:e', dueAt: '2027-04-03T00:00:00Z', type: 'admin.other' },
      { key: 'filter:f', dueAt: '2027-05-01T00:00:00Z' },
    ]);
    const list = async (query: string) =>
      (await t.get(`/admin/api/tasks?keyPrefix=filter:&${query}`).expect(200)).body.items.map(
        (task: { id: string }) => task.id,
      );
    expect(await list('')).toEqual([pending, executed, dead, cancelled, other, later]);
    expect(await list('state=pending')).toEqual([pending, other, later]);
    expect(await list('state=executed')).toEqual([executed]);
    expect(await list('state=dead')).toEqual([dead]);
    expect(await list('state=cancelled')).toEqual([cancelled]);
    expect(await list('type=admin.other')).toEqual([other]);
    expect(await list('key=filter:c')).toEqual([dead]);
    expect(await list('dueFrom=2027-04-02T00:00:00Z&dueBefore=2027-05-01T00:00:00Z')).toEqual([
      dead,
      cancelled,
      other,
    ]);
    const [task] = (await t.get(`/admin/api/tasks?key=filter:c`).expect(200)).body.items;
    expect(task).toMatchObject({
      id: dead,
      type: TEST_TYPE,
      state: 'dead',
      attempts: 5,
      lastError: 'Error: it broke',
      dueAt: '2027-04-02T00:00:00.000Z',
    });
  });

  it.each([
    ['state=finished', 'state'],
    ['limit=0', 'limit'],
    ['limit=1001', 'limit'],
    ['limit=ten', 'limit'],
    ['dueFrom=tomorrow', 'dueFrom'],
    ['dueBefore=2027-01-01', 'dueBefore'],
    ['keyPrefix=', 'keyPrefix'],
    ['sort=id', 'sort'],
  ])('answers ?%s with a 400 naming %s', async (query, field) => {
    const res = await ctx.t.get(`/admin/api/tasks?${query}`).expect(400);
    expect(JSON.stringify(res.body.message)).toContain(field);
  });

  it('refuses a cursor it did not hand out with a 400 naming the cursor', async () => {
    for (const cursor of ['nonsense!', Buffer.from('12.x').toString('base64url'), 'MTIz']) {
      const res = await ctx.t.get(`/admin/api/tasks?cursor=${cursor}`).expect(400);
      expect(res.body).toMatchObject({ field: 'cursor' });
    }
  });
});

describe('a task in detail', () => {
  it('shows payload, attempts, last error, and the instance that holds it', async () => {
    const { t } = ctx;
    const task = await t.delay.schedule({ type: TEST_TYPE, payload: { order: 7 }, delay: '10m' });
    const res = await t.get(`/admin/api/tasks/${task.id}`).expect(200);
    expect(res.body).toMatchObject({
      task: { id: task.id, payload: { order: 7 }, state: 'pending', attempts: 0, lastError: null },
      inThisWheel: true,
    });
    const instanceId = res.body.task.lockedBy;
    expect(instanceId).toEqual(expect.any(String));
    expect(res.body.holder).toMatchObject({ id: instanceId, live: true, self: true });
    expect(res.body.holder.held).toBeGreaterThanOrEqual(1);

    const [dead] = await seed(t, [{ dueAt: '2027-01-01T00:00:00Z', state: 'dead' }]);
    const deadView = (await t.get(`/admin/api/tasks/${dead}`).expect(200)).body;
    expect(deadView).toMatchObject({ holder: null, inThisWheel: false });
    expect(deadView.task).toMatchObject({
      state: 'dead',
      attempts: 5,
      lastError: 'Error: it broke',
    });
  });

  it('is a 404 naming an unknown id, a 400 naming a malformed one', async () => {
    const missing = await ctx.t.get('/admin/api/tasks/987654321').expect(404);
    expect(missing.body).toMatchObject({ id: '987654321' });
    expect(missing.body.message).toContain('987654321');
    for (const id of ['abc', '0', '-1', '1.5', '99999999999999999999']) {
      const res = await ctx.t.get(`/admin/api/tasks/${id}`).expect(400);
      expect(res.body.message).toMatch(/^id must be a task id/);
    }
  });
});

describe('actions', () => {
  /** Posts an action that must be refused, and checks the task's row did not change. */
  async function refused(id: string, action: string, status: number, body?: object) {
    const { t } = ctx;
    const before = await t.row(id);
    const res = await t.post(`/admin/api/tasks/${id}/${action}`, body).expect(status);
    expect(await t.row(id)).toEqual(before);
    return res.body;
  }

  it('cancels a pending task (and its wheel lets go); a second cancel is a 409 naming the state', async () => {
    const { t } = ctx;
    const task = await t.delay.schedule({ type: TEST_TYPE, delay: '5m' });
    const res = await t
      .post(`/admin/api/tasks/${task.id}/cancel`)
      .set('X-Request-Id', 'req-cancel-1')
      .expect(200);
    expect(res.body).toMatchObject({ id: task.id, state: 'cancelled' });
    expect(res.headers['x-request-id']).toBe('req-cancel-1');
    expect(logger.messages('log')).toContain(
      `[req-cancel-1] cancel task ${task.id}: now cancelled, due ${task.dueAt.toISOString()}`,
    );
    expect((await t.get(`/admin/api/tasks/${task.id}`).expect(200)).body.inThisWheel).toBe(false);

    const conflict = await refused(task.id, 'cancel', 409);
    expect(conflict).toMatchObject({ statusCode: 409, state: 'cancelled' });
    expect(conflict.message).toMatch(/it is cancelled/);
    expect(logger.messages('warn').some((m) => m.includes(`cancel task ${task.id} refused`))).toBe(
      true,
    );
  });

  it('retries a dead-lettered task (pending, due now, fresh attempts); retrying a pending one is a 409', async () => {
    const { t } = ctx;
    const [dead] = await seed(t, [{ dueAt: '2025-06-01T00:00:00Z', state: 'dead' }]);
    const res = await t.post(`/admin/api/tasks/${dead}/retry`).expect(200);
    expect(res.body).toMatchObject({ id: dead, state: 'pending', attempts: 0 });
    expect(new Date(res.body.dueAt).getTime()).toBe(t.clock.now());
    expect(await refused(dead, 'retry', 409)).toMatchObject({ state: 'pending' });
    await t.tester.runDue();
    expect(t.runs.ran).toContain(dead);
  });

  it("runs a pending task now: due at the clock's now and fired by the wheel without the clock moving", async () => {
    const { t } = ctx;
    const task = await t.delay.schedule({ type: TEST_TYPE, delay: '45m' });
    const res = await t.post(`/admin/api/tasks/${task.id}/run-now`).expect(200);
    expect(new Date(res.body.dueAt).getTime()).toBe(t.clock.now());
    expect(res.body.lockedBy).toEqual(expect.any(String));
    const report = await t.tester.runDue();
    expect(report.executed).toBeGreaterThanOrEqual(1);
    expect(t.runs.ran).toContain(task.id);
    expect((await t.get(`/admin/api/tasks/${task.id}`).expect(200)).body.task.state).toBe(
      'executed',
    );
    expect(await refused(task.id, 'run-now', 409)).toMatchObject({ state: 'executed' });
  });

  it('reschedules a pending task by delay or to a time', async () => {
    const { t } = ctx;
    const task = await t.delay.schedule({ type: TEST_TYPE, delay: '5m' });
    const byDelay = await t.post(`/admin/api/tasks/${task.id}/reschedule`, { delay: '2h' });
    expect(byDelay.status).toBe(200);
    expect(new Date(byDelay.body.dueAt).getTime()).toBe(t.clock.now() + 2 * 3_600_000);
    const runAt = '2026-06-01T12:00:00.000Z';
    const toTime = await t.post(`/admin/api/tasks/${task.id}/reschedule`, { runAt }).expect(200);
    expect(toTime.body).toMatchObject({ state: 'pending', dueAt: runAt });
  });

  it.each([
    ['cancel', { reason: 'x' }, 'reason'],
    ['run-now', [], 'object'],
    ['reschedule', {}, 'delay'],
    ['reschedule', { delay: '1h', runAt: '2026-06-01T00:00:00Z' }, 'delay'],
    ['reschedule', { delay: 'soon' }, 'delay'],
    ['reschedule', { runAt: 'next week' }, 'runAt'],
    ['reschedule', { delay: '1h', priority: 1 }, 'priority'],
  ])('answers %s with %j by a 400 naming %s, changing nothing', async (action, body, field) => {
    const task = await ctx.t.delay.schedule({ type: TEST_TYPE, delay: '5m' });
    const res = await refused(task.id, action, 400, body);
    expect(JSON.stringify(res.message)).toContain(field);
  });

  it.each(['cancel', 'retry', 'run-now', 'reschedule'])(
    '%s of an unknown id is a 404 naming it, changing nothing',
    async (action) => {
      const { t } = ctx;
      const [{ n: before }] = await t.query(`SELECT count(*)::int AS n FROM delayed_task`);
      const body = action === 'reschedule' ? { delay: '1h' } : undefined;
      const res = await t.post(`/admin/api/tasks/123456789/${action}`, body).expect(404);
      expect(res.body).toMatchObject({ statusCode: 404, id: '123456789' });
      const [{ n: after }] = await t.query(`SELECT count(*)::int AS n FROM delayed_task`);
      expect(after).toBe(before);
    },
  );

  it('refuses reschedule and cancel of an executed task with a 409, changing nothing', async () => {
    const [executed] = await seed(ctx.t, [{ dueAt: '2025-01-01T00:00:00Z', state: 'executed' }]);
    expect(await refused(executed, 'reschedule', 409, { delay: '1h' })).toMatchObject({
      state: 'executed',
    });
    expect(await refused(executed, 'cancel', 409)).toMatchObject({ state: 'executed' });
    expect(await refused(executed, 'retry', 409)).toMatchObject({ state: 'executed' });
  });
});

describe('retrying dead-lettered tasks in bulk', () => {
  it('retries at most limit of those matching, oldest due first, and says whether more are left', async () => {
    const { t } = ctx;
    const bulk = await seed(
      t,
      [5, 1, 4, 2, 3].map((day) => ({
        key: `bulk:${day}`,
        dueAt: `2025-02-0${day}T00:00:00Z`,
        state: 'dead' as const,
      })),
    );
    const [otherDead, pendingBulk] = await seed(t, [
      { key: 'other:1', dueAt: '2025-01-01T00:00:00Z', state: 'dead' },
      { key: 'bulk:pending', dueAt: '2027-01-01T00:00:00Z' },
    ]);
    const byDay = (day: number) => bulk[[5, 1, 4, 2, 3].indexOf(day)];

    const first = await t
      .post('/admin/api/tasks/retry-dead', { keyPrefix: 'bulk:', limit: 3 })
      .set('X-Request-Id', 'req-bulk')
      .expect(200);
    expect(first.body).toEqual({ retried: [byDay(1), byDay(2), byDay(3)], skipped: 0, more: true });
    expect(logger.messages('log')).toContainEqual(
      expect.stringMatching(/^\[req-bulk\] retry dead tasks matching .*: 3 retried, more left$/),
    );
    const second = await t.post('/admin/api/tasks/retry-dead', { keyPrefix: 'bulk:', limit: 3 });
    expect(second.body).toEqual({ retried: [byDay(4), byDay(5)], skipped: 0, more: false });
    const third = await t.post('/admin/api/tasks/retry-dead', { keyPrefix: 'bulk:', limit: 3 });
    expect(third.body).toEqual({ retried: [], skipped: 0, more: false });

    const states = await t.query<{ id: string; dead: boolean }>(
      `SELECT id::text, dead_at IS NOT NULL AS dead FROM delayed_task WHERE id = ANY($1::bigint[])`,
      [[...bulk, otherDead, pendingBulk]],
    );
    const dead = new Set(states.filter((s) => s.dead).map((s) => s.id));
    expect(dead).toEqual(new Set([otherDead]));
  });

  it.each([
    [{}, 'limit'],
    [{ limit: 0 }, 'limit'],
    [{ limit: 1001 }, 'limit'],
    [{ limit: '5' }, 'limit'],
    [{ limit: 5, state: 'pending' }, 'state'],
    [{ limit: 5, dueFrom: 'last year' }, 'dueFrom'],
  ])('answers %j with a 400 naming %s, retrying nothing', async (body, field) => {
    const { t } = ctx;
    await seed(t, [{ key: 'bulk-bad:1', dueAt: '2025-01-01T00:00:00Z', state: 'dead' }]);
    const [{ n: before }] = await t.query(
      `SELECT count(*)::int AS n FROM delayed_task WHERE dead_at IS NOT NULL`,
    );
    const res = await t.post('/admin/api/tasks/retry-dead', body).expect(400);
    expect(JSON.stringify(res.body.message)).toContain(field);
    const [{ n: after }] = await t.query(
      `SELECT count(*)::int AS n FROM delayed_task WHERE dead_at IS NOT NULL`,
    );
    expect(after).toBe(before);
  });
});
