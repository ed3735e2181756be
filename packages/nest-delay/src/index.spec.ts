import * as publicApi from './index.js';
import * as internals from './internal.js';

// Every value the main entry exports is an API to keep through a major
// version: adding one here should be a decision, not a side effect.
describe('the public surface', () => {
  it('exports only what a user of the module needs', () => {
    expect(Object.keys(publicApi).sort()).toEqual([
      'AfterCommit',
      'CLOCK',
      'DelayAdmin',
      'DelayExceptionFilter',
      'DelayLimits',
      'DelayModule',
      'DelaySchedules',
      'DelayService',
      'DelayValidationError',
      'DelayedTaskHandler',
      'DuplicateHandlerError',
      'RecurringTask',
      'ScheduleNotFoundError',
      'TaskNotFoundError',
      'TaskOutcome',
      'TaskStateError',
      'UnknownOptionError',
      'UnknownTaskTypeError',
      'currentTask',
      'defineTask',
      'delayHttpException',
      'delayMigrations',
      'migrateDelaySchema',
      'parseDuration',
      'tryParseDuration',
    ]);
  });

  it('keeps the engine parts on nest-delay/internal, not on the main entry', () => {
    const leaked = Object.keys(internals).filter((name) => name in publicApi);
    expect(leaked).toEqual([]);
  });
});
