import { TEST_TYPE, useAdminTestApp } from './admin-test-app.js';

/**
 * POST /admin/api/entities/:entity/cancel and /reschedule: every pending task
 * of one entity at once, through DelayService; 400 naming the field for bad
 * input, changing nothing.
 */
const ctx = useAdminTestApp();

const pendingOf = async (entity: string) =>
  (
    await ctx.t.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM delayed_task
       WHERE entity = $1 AND executed_at IS NULL AND cancelled_at IS NULL AND dead_at IS NULL`,
      [entity],
    )
  )[0].n;

it('lists by entity, then cancels its pending tasks of the types asked, then the rest', async () => {
  const { t } = ctx;
  const a = await t.delay.schedule({ type: TEST_TYPE, entity: 'order:1', delay: '1h' });
  const b = await t.delay.schedule({ type: 'order.auto-review', entity: 'order:1', delay: '2h' });
  await t.delay.schedule({ type: TEST_TYPE, entity: 'order:2', delay: '1h' });
  const listed = await t.get('/admin/api/tasks?entity=order:1').expect(200);
  expect(
    listed.body.items.map((task: { id: string; entity: string }) => [task.id, task.entity]),
  ).toEqual([
    [a.id, 'order:1'],
    [b.id, 'order:1'],
  ]);

  const some = await t
    .post('/admin/api/entities/order:1/cancel', { types: ['order.auto-review'] })
    .expect(200);
  expect(some.body).toMatchObject({
    entity: 'order:1',
    ids: [b.id],
    byType: { 'order.auto-review': 1 },
  });
  expect(some.body.tasks[0]).toMatchObject({ id: b.id, state: 'cancelled', entity: 'order:1' });
  const rest = await t.post('/admin/api/entities/order%3A1/cancel', {}).expect(200);
  expect(rest.body).toMatchObject({ ids: [a.id], byType: { [TEST_TYPE]: 1 } });
  expect(await pendingOf('order:2')).toBe(1);
});

it('moves them by a duration or to a time', async () => {
  const { t } = ctx;
  const task = await t.delay.schedule({ type: TEST_TYPE, entity: 'order:3', delay: '1h' });
  const by = await t.post('/admin/api/entities/order:3/reschedule', { by: '2h' }).expect(200);
  expect(by.body.tasks[0].dueAt).toBe(new Date(task.dueAt.getTime() + 2 * 3_600_000).toISOString());
  const to = '2030-01-01T00:00:00.000Z';
  const moved = await t.post('/admin/api/entities/order:3/reschedule', { to }).expect(200);
  expect(moved.body).toMatchObject({ ids: [task.id] });
  expect(moved.body.tasks[0].dueAt).toBe(to);
});

it.each([
  ['cancel', 'order:4', { types: [] }, 'types'],
  ['cancel', 'order:4', { types: [''] }, 'types'],
  ['cancel', 'order:4', { types: 'x' }, 'types'],
  ['cancel', 'order:4', { reason: 'x' }, 'reason'],
  ['cancel', 'x'.repeat(501), {}, 'entity'],
  ['cancel', 'order%004', {}, 'entity'],
  ['reschedule', 'order:4', {}, 'by'],
  ['reschedule', 'order:4', { by: '1h', to: '2030-01-01T00:00:00Z' }, 'by'],
  ['reschedule', 'order:4', { by: 'soon' }, 'by'],
  ['reschedule', 'order:4', { to: 'next week' }, 'to'],
])(
  'answers %s of %s with %j by a 400 naming %s, changing nothing',
  async (action, entity, body, field) => {
    const { t } = ctx;
    await t.delay.schedule({ type: TEST_TYPE, entity: 'order:4', delay: '1h' });
    const before = await t.query(`SELECT * FROM delayed_task WHERE entity = 'order:4' ORDER BY id`);
    const res = await t.post(`/admin/api/entities/${entity}/${action}`, body).expect(400);
    expect(JSON.stringify(res.body.message)).toContain(field);
    expect(
      await t.query(`SELECT * FROM delayed_task WHERE entity = 'order:4' ORDER BY id`),
    ).toEqual(before);
  },
);

it('needs the admin token', async () => {
  await ctx.t.http().post('/admin/api/entities/order:1/cancel').send({}).expect(401);
});

it("shows an entity's timeline, and 400 for a bad entity", async () => {
  const { t } = ctx;
  const task = await t.delay.schedule({ type: TEST_TYPE, entity: 'order:5', delay: '1m' });
  await t.tester.advance('1m');
  const res = await t.get('/admin/api/entities/order:5/timeline').expect(200);
  expect(res.body.entity).toBe('order:5');
  expect(
    res.body.entries.map((e: { taskId: string; event: string }) => [e.taskId, e.event]),
  ).toEqual([
    [task.id, 'scheduled'],
    [task.id, 'started'],
    [task.id, 'executed'],
  ]);
  expect(res.body.due).toEqual([]);
  await t.get(`/admin/api/entities/${'x'.repeat(501)}/timeline`).expect(400);
});
