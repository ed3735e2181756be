import { findPendingByIds } from '../claim/claim-statements.js';
import type { Dispatcher } from '../claim/dispatcher.js';
import type { TaskWheel } from '../firing/task-wheel.js';
import type { DelayContext } from '../context/delay-context.js';
import { STRANDED_MARGIN_MS, STRANDED_PAGE } from '../context/tuning.js';
import type { TaskId } from '../task.types.js';
import type { DueRow } from '../tasks/task-row.js';
import { findLeasedOverdue } from './lease-statements.js';

/**
 * The safety net (River's rescuer, Oban's stager): a task leased to this
 * instance is in no loader's reach, so if a fault in the engine let it out
 * of the wheel, the claim queue, the claims in flight and the limit gate
 * while still pending, nothing would run it before a restart or a takeover.
 *
 * Kept as a net in production, with its warning, not made a test-only
 * assertion (issue 45): the engine keeps the invariant (firing/holds.ts:
 * a lease is written only where a hold follows), and the causes found
 * breaking it were fixed at their source (a type not handled here leased by
 * a move, a write committed after its instance's stop, a fate dropping a
 * newer hold; test/delay/held-nowhere.e2e-spec.ts checks `rescued` stays 0).
 * One cause stays outside the engine's reach: a scheduling call whose reply
 * was lost after its commit (its caller saw an error; the task is leased
 * here, and nothing in memory knows it). So a rescue is that, or a fault.
 * Tests that provoke neither can assert `stats().rescued` is 0.
 *
 * Once a loader round (each heartbeat, never at the same time as a lease
 * of the loader's) it reads a page of this instance's pending tasks due
 * more than STRANDED_MARGIN_MS ago, by the leases' index, and holds again
 * those held nowhere here: a warning names them, `stats().rescued` counts
 * them. Holding a task twice is safe (the claim decides), so a race with a
 * claim ending costs one claim that finds nothing, never a second run.
 *
 * It waits while a full batch waits for a claim (the instance is behind).
 * Then the overdue tasks it holds are in the claim queue, and the page
 * would find them accounted for at the server's cost when it has least to
 * spare: behind a backlog, the page's index range starts with the entries
 * of tasks just claimed, dead but kept while any snapshot is older (a
 * reporting query, a forgotten BEGIN). In the long-horizon bench the page
 * took 373 s of the server over the hour, 97 s over a 17-minute run with
 * repeatable-read readers (bench/HISTORY.md). The price: a task it would
 * have found waits for the backlog to drain before it is held again, a
 * delay only an engine fault or a lost reply can bring about.
 */
export class StrandedSweep {
  /** Tasks found held nowhere and held again, since start. */
  rescued = 0;
  /** Where the next page starts (null: from the first): a long overdue list is read over several rounds. */
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
