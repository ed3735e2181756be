import { Injectable, Module } from '@nestjs/common';
import { DelayedTaskHandler, DuplicateHandlerError, ManualClock } from 'nest-delay';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { createDelayTestApp } from './delay-test-app.js';
import { resolveDelayOptions } from '../../packages/nest-delay/src/delay.options.js';

@Injectable()
class SecondEffectHandler {
  @DelayedTaskHandler('test.effect')
  handle(): void {}
}

@Module({ providers: [SecondEffectHandler] })
class DuplicateModule {}

describe('boot', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  it('refuses two handlers for one type, naming both', async () => {
    const boot = createDelayTestApp(db, {}, undefined, [{ module: DuplicateModule }]);
    await expect(boot).rejects.toBeInstanceOf(DuplicateHandlerError);
    await expect(
      createDelayTestApp(db, {}, undefined, [{ module: DuplicateModule }]),
    ).rejects.toThrow(
      /Two handlers for delayed task type "test.effect": TestHandlers.effect and SecondEffectHandler.handle/,
    );
  });

  it('leaves no timer behind after close', async () => {
    const clock = new ManualClock();
    const app = await createDelayTestApp(db, {}, clock);
    await app.delay.schedule({ type: 'test.effect', delay: '5m' });
    expect(clock.pendingTimers).toBeGreaterThan(0);
    await app.close();
    expect(clock.pendingTimers).toBe(0);
  });

  it('leaves a task scheduled during shutdown unleased, for another instance to load', async () => {
    const app = await createDelayTestApp(db);
    const before = await app.delay.schedule({ type: 'test.effect', delay: '1m' });
    await app.runtime.shutdown(true);
    const during = await app.delay.schedule({ type: 'test.effect', delay: '1m' });
    const rows = await app.query(
      `SELECT id, locked_by FROM delayed_task WHERE id = ANY($1) ORDER BY id`,
      [[before.id, during.id]],
    );
    // The first was handed back by the shutdown; the second was never leased.
    expect(rows.map((r) => r.locked_by)).toEqual([null, null]);
    expect(await app.query(`SELECT id FROM delay_instance`)).toEqual([]);
    await app.close();
  });

  it('names the option that is wrong', () => {
    expect(() => resolveDelayOptions({ tickMs: 0 })).toThrow(
      /DelayModule option tickMs must be a positive integer; got 0/,
    );
    expect(() => resolveDelayOptions({ lease: 'forever' })).toThrow(
      /DelayModule option lease must be/,
    );
    expect(() => resolveDelayOptions({ retry: { jitter: 2 } })).toThrow(
      /retry.jitter must be between 0 and 1/,
    );
    expect(() => resolveDelayOptions({ window: 10, tickMs: 1000 })).toThrow(
      /window must be at least one tick/,
    );
  });
});
