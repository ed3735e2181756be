import { jest } from '@jest/globals';

// A user without @opentelemetry/api (nest-delay's optional peer): its import
// fails as Node fails it, and the module boots, schedules and runs as before.
let importTried = false;
jest.unstable_mockModule('@opentelemetry/api', () => {
  importTried = true;
  throw Object.assign(new Error("Cannot find package '@opentelemetry/api'"), {
    code: 'ERR_MODULE_NOT_FOUND',
  });
});

const { createTestDatabase } = await import('../support/test-database.js');
const { MINUTE, createDelayTestApp } = await import('./delay-test-app.js');

describe('without @opentelemetry/api', () => {
  it('boots, schedules and runs a task, storing no trace context', async () => {
    const db = await createTestDatabase();
    const t = await createDelayTestApp(db);
    try {
      expect(importTried).toBe(true);
      const task = await t.delay.schedule({
        type: 'test.effect',
        payload: { fail: 1 },
        delay: '1m',
      });
      await t.tester.advance(MINUTE);
      await t.tester.advance(MINUTE);
      expect(await t.effects(task.id)).toBe(1);
      const [row] = await t.query(`SELECT trace_context FROM delayed_task WHERE id = $1`, [
        task.id,
      ]);
      expect(row.trace_context).toBeNull();
      expect((await t.delay.get({ id: task.id }))?.state).toBe('executed');
    } finally {
      await t.close();
      await db.drop();
    }
  });
});
