import type { Clock } from '../clock/index.js';
import { countTasks, TASK_STATES } from './admin-statements.js';
import type { Sql } from '../store/sql.js';
import type { TaskState } from '../task.types.js';

/** How many tasks are in one state: exact, or at least `count` when `capped`. */
export interface StateCount {
  count: number;
  capped: boolean;
}

/** Tasks per state and per type, as of `computedAt`. */
export interface TaskCounts {
  computedAt: Date;
  /** Rows read per state at most: a state with this many is reported capped. */
  cap: number;
  states: Record<TaskState, StateCount>;
  /** Per type and state, among the rows read: exact for a state that is not capped. */
  types: Array<{ type: string } & Record<TaskState, number>>;
}

/**
 * Counting is what dashboards turn into the biggest load on a database, so
 * counts here are bounded (at most `cap` rows read per state) and shared: one
 * computation serves every caller for `maxAgeMs` by this instance's clock,
 * and callers arriving while it runs wait for the same one.
 */
export class TaskCountsCache {
  private latest:
    { cap: number; atMs: number; emptied: number; counts: Promise<TaskCounts> } | undefined;

  constructor(
    private readonly sql: () => Sql,
    private readonly clock: Clock,
    /** Changes when the tables were emptied (DelayTester.reset): the counts are computed again. */
    private readonly emptied: () => number = () => 0,
  ) {}

  get(cap: number, maxAgeMs: number): Promise<TaskCounts> {
    const nowMs = this.clock.now();
    const emptied = this.emptied();
    const latest = this.latest;
    if (
      latest &&
      latest.cap === cap &&
      latest.emptied === emptied &&
      nowMs - latest.atMs < maxAgeMs
    )
      return latest.counts;
    const counts = this.compute(cap, nowMs);
    this.latest = { cap, atMs: nowMs, emptied, counts };
    // A failed count is not cached: the next caller tries again.
    counts.catch(() => {
      if (this.latest?.counts === counts) this.latest = undefined;
    });
    return counts;
  }

  private async compute(cap: number, nowMs: number): Promise<TaskCounts> {
    // One row past the cap tells a state of exactly cap rows apart from a larger one.
    const rows = await countTasks(this.sql(), cap + 1);
    const states = Object.fromEntries(
      TASK_STATES.map((state) => [state, { count: 0, capped: false }]),
    ) as Record<TaskState, StateCount>;
    const byType = new Map<string, { type: string } & Record<TaskState, number>>();
    for (const row of rows) {
      states[row.state].count += row.n;
      let entry = byType.get(row.type);
      if (!entry) {
        entry = { type: row.type, pending: 0, executed: 0, cancelled: 0, dead: 0 };
        byType.set(row.type, entry);
      }
      entry[row.state] = row.n;
    }
    for (const state of TASK_STATES) {
      if (states[state].count > cap) states[state] = { count: cap, capped: true };
    }
    return { computedAt: new Date(nowMs), cap, states, types: [...byType.values()] };
  }
}
