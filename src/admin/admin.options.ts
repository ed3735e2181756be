import type { AdminPulse } from './admin-pulse.js';

/** What AdminModule is mounted with (from ADMIN_TOKEN and ADMIN_COUNT_CAP). */
export interface AdminOptions {
  token: string;
  /** Rows the counts read per state at most; a state with more is reported capped. */
  countCap: number;
  /** The observer DelayModule reports outcomes to: executed/s and lateness for the stream. */
  pulse: AdminPulse;
}

export const ADMIN_OPTIONS = Symbol('ADMIN_OPTIONS');
