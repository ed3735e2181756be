export { TimingWheel } from './timing-wheel.js';
export type { DueEntry, Placement, TimingWheelOptions } from './timing-wheel.js';
export type { EntryId } from './id-index.js';
