export { TimingWheel } from './timing-wheel.js';
export { DueQueue } from './due-queue.js';
export type { DueEntry, TimingWheelOptions } from './timing-wheel.js';
export type { EntryId } from './id-index.js';
export { wheelCensus, type WheelCensus, type WheelRegion } from './wheel-census.js';
