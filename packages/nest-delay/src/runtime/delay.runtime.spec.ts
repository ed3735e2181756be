import { shutdownHooksMissing } from './delay.runtime.js';

describe('the warning about shutdown hooks', () => {
  it('is given when nothing listens for SIGTERM outside a test runner', () => {
    expect(shutdownHooksMissing(0, {})).toBe(true);
  });

  it('is not given when something will handle SIGTERM (enableShutdownHooks, or the app itself)', () => {
    expect(shutdownHooksMissing(1, {})).toBe(false);
  });

  it.each([{ JEST_WORKER_ID: '1' }, { VITEST: 'true' }, { NODE_ENV: 'test' }])(
    'is not given under a test runner: %o',
    (env) => {
      expect(shutdownHooksMissing(0, env)).toBe(false);
    },
  );
});
