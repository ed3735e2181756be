import { Injectable, Module } from '@nestjs/common';
import { DelayedTaskHandler, DuplicateHandlerError } from '../../src/delay/index.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { createDelayTestApp } from './delay-test-app.js';

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
    await expect(createDelayTestApp(db, {}, undefined, [{ module: DuplicateModule }])).rejects.toThrow(
      /Two handlers for delayed task type "test.effect": TestHandlers.effect and SecondEffectHandler.handle/,
    );
  });

  it('names the option that is wrong', async () => {
    await expect(createDelayTestApp(db, { tickMs: 0 })).rejects.toThrow(/tickMs must be a positive integer/);
    await expect(createDelayTestApp(db, { lease: 'forever' })).rejects.toThrow(/lease must be/);
  });
});
