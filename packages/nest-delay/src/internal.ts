// nest-delay/internal: parts of the engine that are not its public API, reachable
// for code that knows what it is leaning on (this repository's app, bench and
// tests). NOT covered by semver: anything here may change or go in any release,
// a patch included. Users: import from 'nest-delay' and 'nest-delay/testing'.
export {
  TimingWheel,
  wheelCensus,
  type DueEntry,
  type TimingWheelOptions,
  type WheelCensus,
  type WheelRegion,
} from './wheel/index.js';
export { SystemClock } from './clock/index.js';
export { DEFAULT_COUNT_CAP, MAX_PAGE } from './admin/delay-admin.service.js';
export { readTimeline } from './admin/entity-timeline.js';
