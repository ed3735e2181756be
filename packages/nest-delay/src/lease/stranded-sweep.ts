import { findPendingByIds, findLeasedOverdue } from './lease-statements.js';
import type { Dispatcher } from '../claim/dispatcher.js';
import type { TaskWheel } from '../firing/task-wheel.js';
import type { DelayContext } from '../context/delay-context.js';
import { STRANDED_MARGIN_MS, STRANDED_PAGE } from '../context/tuning.js';
import type { TaskId } from '../task.types.js';
import type { DueRow } from '../tasks/task-row.js';

/**
 * The safety net for the invariant of the hold rules (firing/task-wheel.ts) (a pending task leased
 * here is held here): nothing else would run a task leased to this instance
 * before a restart or a takeover. The one cause outside the engine's reach is
 * a scheduling call whose reply was lost after its commit; any other rescue
 * is an engine fault, so tests that provoke neither assert `rescued` is 0.
 *
 * Once a loader round (never beside one of its leases) it reads a page of
 * this instance's tasks overdue by STRANDED_MARGIN_MS and holds again those
 * held nowhere; holding twice is safe (the claim decides). It skips its round
 * while the instance is behind: then the page's index range starts with
 * just-claimed rows' dead versions, costly to read, and what it would find
 * waits only until the backlog drains.
 */
export class StrandedSweep {
  rescued = 0;
  /** Where the next page starts (null: from the first). */
  private after: DueRow | null = null;

  constructor(
    private readonly ctx: DelayContext,
    private readonly wheel: TaskWheel,
    private readonly dispatcher: Dispatcher,
  ) {}

  async run(): Promise<void> {
    const { ctx } = this;
    if (this.dispatcher.behind) return;
    const { pool } = ctx.db;
    const nowMs = ctx.clock.now();
    const rows = await findLeasedOverdue(
      pool,
      ctx.options.instanceId,
      new Date(nowMs - STRANDED_MARGIN_MS),
      this.after,
      STRANDED_PAGE,
    );
    this.after = rows.length < STRANDED_PAGE ? null : rows[rows.length - 1];
    const typeOf = new Map(rows.map((row) => [row.id, row.type]));
    const unheld = rows.filter((row) => !this.accounted(row.id, row.type)).map((row) => row.id);
    if (unheld.length === 0) return;
    // Looked at again by id: a claim may have ended (and run it) since the page was read.
    const stranded = (await findPendingByIds(pool, unheld))
      .filter((row) => ctx.policy.holds(row.locked_by))
      .filter((row) => !this.accounted(row.id, typeOf.get(row.id)!));
    if (stranded.length === 0) return;
    this.rescued += stranded.length;
    const ids = stranded.map((row) => row.id);
    ctx.logger.warn(
      `Found ${ids.length} pending task(s) leased to this instance, due more than ${STRANDED_MARGIN_MS} ms ago and held nowhere in it; holding them again (a scheduling call whose reply was lost after it committed, or else an engine fault: please report it): ${ids.join(', ')}`,
    );
    for (const id of ids) this.wheel.hold(id, ctx.clock.now(), typeOf.get(id));
  }

  private accounted(id: TaskId, type: string): boolean {
    return this.wheel.has(id) || this.dispatcher.accounts(id, type);
  }
}
