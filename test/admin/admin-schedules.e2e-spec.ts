import { PURGE_IDEMPOTENCY_KEYS_SCHEDULE as PURGE } from '../../src/orders/idempotency-keys.js';
import { ADMIN_TOKEN, useAdminTestApp } from './admin-test-app.js';

const START = Date.UTC(2026, 0, 1); // the ManualClock's start
const MINUTE = 60_000;
const at = (minutes: number) => new Date(START + minutes * MINUTE).toISOString();

const app = useAdminTestApp({ ADMIN_TOKEN, ORDER_IDEMPOTENCY_PURGE_EVERY: '10m' });

const purgeSchedule = async () => {
  const res = await app.t.get('/admin/api/schedules').expect(200);
  return res.body.find((schedule: { name: string }) => schedule.name === PURGE);
};

describe('GET /admin/api/schedules', () => {
  it("lists the app's schedules: rule, next and last occurrence and its outcome", async () => {
    await app.t.tester.advanceTo(START + 10 * MINUTE);
    expect(await purgeSchedule()).toEqual({
      name: PURGE,
      type: PURGE,
      rule: {
        cron: null,
        timeZone: 'UTC',
        everyMs: 10 * MINUTE,
        catchUp: 'one',
        catchUpCap: 100,
        overlap: 'skip',
      },
      paused: false,
      inCode: true,
      nextAt: at(20),
      lastOccurrence: {
        at: at(10),
        taskId: expect.any(String),
        state: 'executed',
        lastError: null,
      },
      missed: 0,
    });
  });

  it('needs the admin token', async () => {
    await app.t.http().get('/admin/api/schedules').expect(401);
    await app.t.http().post(`/admin/api/schedules/${PURGE}/pause`).expect(401);
  });
});

describe('POST /admin/api/schedules/:name/pause and /resume', () => {
  it('pauses a schedule everywhere (nothing runs) and resumes it with its catch-up policy', async () => {
    const paused = await app.t.post(`/admin/api/schedules/${PURGE}/pause`).expect(200);
    expect(paused.body).toMatchObject({ name: PURGE, paused: true, nextAt: null });
    const ran = async () =>
      (
        await app.t.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM delayed_task WHERE schedule_name = $1 AND executed_at IS NOT NULL`,
          [PURGE],
        )
      )[0].n;
    const before = await ran();

    await app.t.tester.advanceTo(START + 45 * MINUTE);
    expect(await ran()).toBe(before);
    expect(await purgeSchedule()).toMatchObject({ paused: true, lastOccurrence: { at: at(10) } });

    // Missed 00:20, 00:30 and 00:40: catch-up 'one' runs the latest and counts the others.
    const resumed = await app.t.post(`/admin/api/schedules/${PURGE}/resume`).expect(200);
    expect(resumed.body).toMatchObject({
      paused: false,
      nextAt: at(50),
      lastOccurrence: { at: at(40), state: 'pending' },
      missed: 2,
    });
    await app.t.tester.runDue();
    expect(await ran()).toBe(before + 1);
    expect(await purgeSchedule()).toMatchObject({
      nextAt: at(50),
      lastOccurrence: { at: at(40), state: 'executed' },
    });
  });

  it('answers 404 naming an unknown schedule, not a 500', async () => {
    for (const action of ['pause', 'resume']) {
      const res = await app.t.post(`/admin/api/schedules/no.such%20schedule/${action}`).expect(404);
      expect(res.body).toMatchObject({
        statusCode: 404,
        message: 'No schedule is named "no.such schedule"',
        schedule: 'no.such schedule',
      });
    }
  });
});
