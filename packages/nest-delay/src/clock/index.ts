export { CLOCK } from './clock.js';
export type { Clock, TimerHandle } from './clock.js';
export { SystemClock } from './system-clock.js';
export { DatabaseClock } from './database-clock.js';
