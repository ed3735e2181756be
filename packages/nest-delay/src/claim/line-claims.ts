import { GATE_CLAIM_MAX_MS } from '../runtime/tuning.js';
import type { Sql } from '../store/sql.js';
import type { TaskId } from '../task.types.js';
import { claimTasks, type ClaimRow, type LineRefusal } from './claim-statements.js';

/** The line a gate's claim is for, as its claim statements need it. */
export interface LineGating {
  type: string;
  key: string;
  /** Declared concurrency (a run-time override in the table decides otherwise). */
  concurrency: number | null;
  /** The declared limits include a rate. */
  paced: boolean;
  /** Rate credits taken for its starts: each claim checks the one its start will use. */
  credits?: { holder: string; next: () => number | undefined };
}

/**
 * A gate's claim takes its tasks one at a time, each by a claim statement of
 * its own run just before its handler, in the claim's transaction: the
 * database decides before each start whether the type is paused, whether a
 * rate applies and its credit is still this instance's (docs/limits.md).
 * The first takes the line's concurrency seat, which the later ones keep.
 * It stops at a refusal (`refused`), or once the claim has run GATE_CLAIM_MAX_MS
 * (`left`: the tasks not tried, back to their line).
 */
export class LineClaims {
  readonly claimed: ClaimRow[] = [];
  readonly deferred: TaskId[] = [];
  refused: LineRefusal | null = null;
  /** Not tried: the claim stopped before them. */
  left: TaskId[] = [];
  private index = 0;
  private seated = false;
  private readonly beganMs = performance.now();

  constructor(
    private readonly sql: Sql,
    private readonly ids: TaskId[],
    private readonly claim: { now: Date; noteId: string; alone: boolean; overdueAfterMs: number },
    private readonly line: LineGating,
  ) {}

  /** The next task claimed, or undefined when the claim is to stop. */
  async next(): Promise<ClaimRow | undefined> {
    const { ids, line } = this;
    while (this.index < ids.length) {
      if (this.claimed.length > 0 && performance.now() - this.beganMs > GATE_CLAIM_MAX_MS) break;
      const credit = line.credits?.next();
      const result = await claimTasks(
        this.sql,
        [ids[this.index]],
        this.claim.now,
        this.claim.noteId,
        this.claim.alone,
        {
          line: {
            type: line.type,
            key: line.key,
            concurrency: line.concurrency,
            paced: line.paced,
            seated: this.seated,
            credits:
              line.credits && credit !== undefined
                ? { credits: [credit], holder: line.credits.holder }
                : undefined,
          },
        },
        this.claim.overdueAfterMs,
      );
      if (result.refused) {
        this.refused = result.refused;
        break;
      }
      this.index++;
      this.seated = true;
      this.deferred.push(...result.deferred);
      const [row] = result.claimed;
      if (row) {
        this.claimed.push(row);
        return row;
      }
    }
    this.left = ids.slice(this.index);
    return undefined;
  }
}
