import { CapturingLogger } from '../delay/delay-test-app.js';
import {
  ADMIN_TOKEN,
  FLAKY_TYPE,
  LIMITED_TYPE,
  TEST_TYPE,
  useAdminTestApp,
} from './admin-test-app.js';

const logger = new CapturingLogger();
// The notification's rate as configured here (not the default), to see configuration reach it.
const ctx = useAdminTestApp({ ADMIN_TOKEN, NOTIFY_RATE_PER_SECOND: '7' }, { logger });

const typeOf = async (type: string) => {
  const res = await ctx.t.get('/admin/api/types').expect(200);
  return res.body.find((info: { type: string }) => info.type === type);
};

/** The rows shared limits keep per type: what an action must leave alone when it is refused. */
/** What was set at run time (a limited type's row, written at boot, sets nothing). */
const stored = () =>
  ctx.t.query(
    `SELECT type, paused_at, overridden, concurrency, rate_starts, rate_per_ms FROM delay_type_limit
     WHERE paused_at IS NOT NULL OR overridden ORDER BY type`,
  );

const DECLARED = { concurrency: 2, rate: { starts: 50, perMs: 1000 } };

describe('GET /admin/api/types', () => {
  it('lists every type with a handler: declared, set and effective limits, per key, paused, waiting', async () => {
    const res = await ctx.t.get('/admin/api/types').expect(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body.map((info: { type: string }) => info.type)).toEqual([
      FLAKY_TYPE,
      LIMITED_TYPE,
      TEST_TYPE,
      'order.auto-review',
      'order.close-unpaid',
      'order.notify-closed',
    ]);
    expect(res.body).toContainEqual({
      type: LIMITED_TYPE,
      paused: false,
      pausedAt: null,
      declared: DECLARED,
      // Stored at boot by the instance answering (the only one, the last to boot).
      declaredBy: expect.any(String),
      override: null,
      effective: DECLARED,
      perKey: true,
      waiting: 0,
      waitingHere: 0,
    });
    // The app's own handlers: closes and auto-reviews unlimited, the notification at its rate.
    for (const type of ['order.close-unpaid', 'order.auto-review'])
      expect(await typeOf(type)).toMatchObject({ declared: null, effective: null, perKey: false });
    expect(await typeOf('order.notify-closed')).toMatchObject({
      declared: { concurrency: null, rate: { starts: 7, perMs: 1000 } },
      effective: { concurrency: null, rate: { starts: 7, perMs: 1000 } },
      perKey: false,
    });
    expect(await typeOf(TEST_TYPE)).toMatchObject({ declared: null, effective: null });
  });

  it('needs the admin token, on every route', async () => {
    const { t } = ctx;
    await t.http().get('/admin/api/types').expect(401);
    await t.http().post(`/admin/api/types/${TEST_TYPE}/pause`).expect(401);
    await t.http().post(`/admin/api/types/${TEST_TYPE}/resume`).expect(401);
    await t.http().put(`/admin/api/types/${TEST_TYPE}/limit`).send({ concurrency: 1 }).expect(401);
    await t.http().delete(`/admin/api/types/${TEST_TYPE}/limit`).expect(401);
    expect(await stored()).toEqual([]);
  });
});

describe('POST /admin/api/types/:type/pause and /resume', () => {
  it('holds every task of the type while paused, keeps their due times, and runs them on resume in due order per key, once each', async () => {
    const { t } = ctx;
    const tasks = [];
    for (let i = 0; i < 6; i++) {
      tasks.push(
        await t.delay.schedule({
          type: LIMITED_TYPE,
          payload: { merchant: `m${i % 2}` },
          delay: `${10 + i}s`,
        }),
      );
    }
    const free = await t.delay.schedule({ type: TEST_TYPE, delay: '10s' });

    const paused = await t
      .post(`/admin/api/types/${LIMITED_TYPE}/pause`)
      .set('X-Request-Id', 'req-pause-1')
      .expect(200);
    expect(paused.body).toMatchObject({
      type: LIMITED_TYPE,
      paused: true,
      pausedAt: new Date(t.clock.now()).toISOString(),
      effective: DECLARED,
      waiting: 0,
    });
    expect(logger.messages('log')).toContain(
      `[req-pause-1] pause type "${LIMITED_TYPE}": now paused, concurrency 2, rate 50 per 1000 ms, as declared, 0 waiting`,
    );

    await t.tester.advance('1m');
    expect(t.runs.limitedRan).toEqual([]);
    // Another type keeps its pace.
    expect(t.runs.ran).toContain(free.id);
    const waitingNow = await typeOf(LIMITED_TYPE);
    expect(waitingNow).toMatchObject({ paused: true, waiting: 6, waitingHere: 6 });
    for (const task of tasks) expect((await t.row(task.id)).due_at).toEqual(task.dueAt);
    expect(
      (
        await t.query(`SELECT attempts FROM delayed_task WHERE id = ANY($1)`, [
          tasks.map((task) => task.id),
        ])
      ).map((row) => row.attempts),
    ).toEqual([0, 0, 0, 0, 0, 0]);

    // Pausing again changes nothing, the time it began included.
    const again = await t.post(`/admin/api/types/${LIMITED_TYPE}/pause`).expect(200);
    expect(again.body.pausedAt).toBe(paused.body.pausedAt);

    // One at a time per merchant from now on, so the order of starts is the order of claims.
    const one = await t
      .put(`/admin/api/types/${LIMITED_TYPE}/limit`, { concurrency: 1 })
      .expect(200);
    expect(one.body).toMatchObject({ paused: true, effective: { concurrency: 1 } });
    const resumed = await t.post(`/admin/api/types/${LIMITED_TYPE}/resume`).expect(200);
    expect(resumed.body).toMatchObject({ paused: false, pausedAt: null });
    await t.tester.runDue();
    await t.delete(`/admin/api/types/${LIMITED_TYPE}/limit`).expect(200);
    // Each once; in due order within each merchant's line (the lines run side by side).
    expect([...t.runs.limitedRan].sort()).toEqual(tasks.map((task) => task.id).sort());
    for (const merchant of [0, 1]) {
      const ids = tasks.filter((_, i) => i % 2 === merchant).map((task) => task.id);
      expect(t.runs.limitedRan.filter((id) => ids.includes(id))).toEqual(ids);
    }
    expect(await typeOf(LIMITED_TYPE)).toMatchObject({ paused: false, waiting: 0, waitingHere: 0 });
    const states = await t.query(
      `SELECT executed_at IS NOT NULL AS ran FROM delayed_task WHERE id = ANY($1)`,
      [tasks.map((task) => task.id)],
    );
    expect(states.every((row) => row.ran)).toBe(true);
  });

  it('pauses and resumes a type with no limits of its own', async () => {
    const { t } = ctx;
    await t.post(`/admin/api/types/${TEST_TYPE}/pause`).expect(200);
    const task = await t.delay.schedule({ type: TEST_TYPE, delay: '5s' });
    await t.tester.advance('10s');
    expect(t.runs.ran).not.toContain(task.id);
    expect(await typeOf(TEST_TYPE)).toMatchObject({ paused: true, effective: null, waiting: 1 });
    await t.post(`/admin/api/types/${TEST_TYPE}/resume`).expect(200);
    await t.tester.runDue();
    expect(t.runs.ran.filter((id) => id === task.id)).toHaveLength(1);
  });
});

describe('PUT and DELETE /admin/api/types/:type/limit', () => {
  afterEach(async () => {
    await ctx.t.delete(`/admin/api/types/${LIMITED_TYPE}/limit`).expect(200);
  });

  it('sets limits in place of the declared ones: a field given replaces, null removes, one left out stays', async () => {
    const { t } = ctx;
    const set = await t
      .put(`/admin/api/types/${LIMITED_TYPE}/limit`, { concurrency: 1 })
      .set('X-Request-Id', 'req-limit-1')
      .expect(200);
    expect(set.body).toMatchObject({
      declared: DECLARED,
      override: { concurrency: 1, rate: DECLARED.rate },
      effective: { concurrency: 1, rate: DECLARED.rate },
      perKey: true,
    });
    expect(logger.messages('log')).toContain(
      `[req-limit-1] set limit of type "${LIMITED_TYPE}" to {"concurrency":1}: now running, concurrency 1, rate 50 per 1000 ms, set at run time, 0 waiting`,
    );

    const rate = await t
      .put(`/admin/api/types/${LIMITED_TYPE}/limit`, { rate: { starts: 5, per: '500ms' } })
      .expect(200);
    expect(rate.body.effective).toEqual({ concurrency: 1, rate: { starts: 5, perMs: 500 } });
    const asNumber = await t
      .put(`/admin/api/types/${LIMITED_TYPE}/limit`, { rate: { starts: 5, per: 2000 } })
      .expect(200);
    expect(asNumber.body.effective.rate).toEqual({ starts: 5, perMs: 2000 });

    const none = await t
      .put(`/admin/api/types/${LIMITED_TYPE}/limit`, { concurrency: null, rate: null })
      .expect(200);
    expect(none.body).toMatchObject({
      declared: DECLARED,
      override: { concurrency: null, rate: null },
      effective: null,
    });

    const reset = await t.delete(`/admin/api/types/${LIMITED_TYPE}/limit`).expect(200);
    expect(reset.body).toMatchObject({ declared: DECLARED, override: null, effective: DECLARED });
  });

  it('limits a type that declares none, and goes back to unlimited', async () => {
    const { t } = ctx;
    const set = await t.put(`/admin/api/types/${TEST_TYPE}/limit`, { concurrency: 4 }).expect(200);
    expect(set.body).toMatchObject({
      declared: null,
      override: { concurrency: 4, rate: null },
      effective: { concurrency: 4, rate: null },
      perKey: false,
    });
    // A task of the type now runs through the limit, and runs.
    const task = await t.delay.schedule({ type: TEST_TYPE, delay: '2s' });
    await t.tester.advance('3s');
    expect(t.runs.ran).toContain(task.id);
    const reset = await t.delete(`/admin/api/types/${TEST_TYPE}/limit`).expect(200);
    expect(reset.body).toMatchObject({ declared: null, override: null, effective: null });
  });

  it('keeps a pause across set and reset', async () => {
    const { t } = ctx;
    await t.post(`/admin/api/types/${LIMITED_TYPE}/pause`).expect(200);
    expect(
      (await t.put(`/admin/api/types/${LIMITED_TYPE}/limit`, { concurrency: 5 }).expect(200)).body
        .paused,
    ).toBe(true);
    expect((await t.delete(`/admin/api/types/${LIMITED_TYPE}/limit`).expect(200)).body.paused).toBe(
      true,
    );
    expect((await t.post(`/admin/api/types/${LIMITED_TYPE}/resume`).expect(200)).body.paused).toBe(
      false,
    );
  });
});

describe('refused input', () => {
  it.each([
    [
      { concurrency: 0 },
      'concurrency',
      /^concurrency must be an integer from 1 to 100000 \(pause the type for 0\)/,
    ],
    [{ concurrency: 100_001 }, 'concurrency', /^concurrency must be an integer from 1 to 100000/],
    [
      { rate: { starts: 0, per: '1s' } },
      'rate.starts',
      /^rate\.starts must be an integer from 1 to 10000/,
    ],
    [{ rate: { starts: 5, per: '25h' } }, 'rate.per', /^rate\.per must be from 1 ms to 24 hours/],
    [{ rate: { starts: 5, per: 0 } }, 'rate.per', /^rate\.per must be from 1 ms to 24 hours/],
  ])('400 for %j, naming %s, from the engine', async (body, field, message) => {
    const { t } = ctx;
    const before = await stored();
    const res = await t.put(`/admin/api/types/${LIMITED_TYPE}/limit`, body).expect(400);
    expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request', field });
    expect(res.body.message).toMatch(message);
    expect(await stored()).toEqual(before);
  });

  it.each([
    [{ concurrency: 1.5 }, 'concurrency must be an integer number'],
    [{ concurrency: '2' }, 'concurrency must be an integer number'],
    [{ rate: '10/s' }, 'rate must be an object'],
    [
      { rate: { starts: 5 } },
      "rate.per must be a duration such as '1s', '500ms' or '1m', or a number of ms; got nothing",
    ],
    [
      { rate: { starts: 5, per: 'soon' } },
      `rate.per must be a duration such as '1s', '500ms' or '1m', or a number of ms; got "soon"`,
    ],
    [
      { rate: { starts: 5, per: -1 } },
      "rate.per must be a duration such as '1s', '500ms' or '1m', or a number of ms; got -1",
    ],
    [{ rate: { starts: 'five', per: '1s' } }, 'rate.starts must be an integer number'],
    [{ rate: { starts: 5, per: '1s', burst: 3 } }, 'rate.property burst should not exist'],
    [{ limit: 3 }, 'property limit should not exist'],
    [
      {},
      'Give concurrency, rate or both (null removes that limit); DELETE goes back to the declared limits',
    ],
    [[1, 2], 'request body must be a JSON object, not an array'],
  ])('400 for the body %j, before the engine is asked', async (body, message) => {
    const { t } = ctx;
    const before = await stored();
    const res = await t.put(`/admin/api/types/${LIMITED_TYPE}/limit`, body).expect(400);
    expect([res.body.message].flat()).toContain(message);
    expect(await stored()).toEqual(before);
  });

  it('400 for a type that cannot be one, or a body on an action that takes none', async () => {
    const { t } = ctx;
    const before = await stored();
    const nul = await t.post('/admin/api/types/bad%00type/pause').expect(400);
    expect(nul.body).toMatchObject({ field: 'type' });
    expect(nul.body.message).toMatch(/^type must be a task type: 1 to 200 characters/);
    await t.post(`/admin/api/types/${'x'.repeat(201)}/pause`).expect(400);
    await t.put(`/admin/api/types/%ED%A0%80/limit`, { concurrency: 1 }).expect(400);
    const body = await t.post(`/admin/api/types/${LIMITED_TYPE}/pause`, { now: true }).expect(400);
    expect(body.body.message).toEqual(['property now should not exist']);
    await t.delete(`/admin/api/types/${LIMITED_TYPE}/limit`).send({ x: 1 }).expect(400);
    expect(await stored()).toEqual(before);
  });

  it('404 naming a type nobody handles, on every action, and nothing is stored', async () => {
    const { t } = ctx;
    const before = await stored();
    const attempts = [
      t.post('/admin/api/types/no.such%20type/pause'),
      t.post('/admin/api/types/no.such%20type/resume'),
      t.put('/admin/api/types/no.such%20type/limit', { concurrency: 1 }),
      t.delete('/admin/api/types/no.such%20type/limit'),
    ];
    for (const attempt of attempts) {
      const res = await attempt.set('X-Request-Id', 'req-unknown').expect(404);
      expect(res.body).toEqual({
        statusCode: 404,
        error: 'Not Found',
        message:
          'No task type is named "no.such type": no handler for it here and nothing set for it at run time (GET /admin/api/types lists them)',
        type: 'no.such type',
      });
    }
    expect(await stored()).toEqual(before);
    expect(
      logger.messages('warn').filter((m) => m.startsWith('[req-unknown]') && m.includes('refused')),
    ).toHaveLength(4);
  });

  it('never answers 500, whatever the body', async () => {
    const { t } = ctx;
    const bodies: unknown[] = [
      null,
      'text',
      42,
      true,
      { concurrency: null },
      { concurrency: Number.MAX_SAFE_INTEGER + 2 },
      { concurrency: { $gt: 1 } },
      { rate: [] },
      '{"rate":{"starts":1e400,"per":"1s"}}',
      { rate: { starts: 1, per: '9'.repeat(40) } },
      { rate: { starts: 1, per: '1.5s' } },
      { rate: { starts: 1, per: 1e300 } },
      { ['__proto__']: { concurrency: 1 } },
    ];
    for (const body of bodies) {
      const req = t
        .http()
        .put(`/admin/api/types/${LIMITED_TYPE}/limit`)
        .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
        .set('Content-Type', 'application/json');
      const res = await req.send(typeof body === 'string' ? body : JSON.stringify(body));
      expect([200, 400]).toContain(res.status);
    }
    await t.delete(`/admin/api/types/${LIMITED_TYPE}/limit`).expect(200);
    const broken = await t
      .http()
      .put(`/admin/api/types/${LIMITED_TYPE}/limit`)
      .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
      .set('Content-Type', 'application/json')
      .send('{"concurrency": ');
    expect(broken.status).toBe(400);
  });
});
