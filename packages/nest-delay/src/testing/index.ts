// nest-delay/testing: helpers for testing an app that uses DelayModule.
export { ManualClock } from './manual-clock.js';
export {
  DelayTester,
  useManualClock,
  type AdvanceOptions,
  type PerformResult,
  type RunReport,
  type ScheduledFilter,
} from './delay-tester.js';
