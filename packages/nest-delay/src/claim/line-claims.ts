import {
  LIMIT_LOCK_CLASS,
  PAUSE_LOCK_CLASS,
  declaredColumn,
  pauseWaitingProbe,
  seatLockKey,
} from '../limits/limit-statements.js';
import { GATE_CLAIM_MAX_MS } from '../context/tuning.js';
import type { Sql } from '../store/sql.js';
import { compareIds } from '../task-ref.js';
import type { TaskId } from '../task.types.js';
import {
  claimStatement,
  readClaimed,
  returnUnstarted,
  type ClaimedWire,
  type PassedRow,
} from './claim-statements.js';
import type { ClaimRow } from '../tasks/task-row.js';
import type { LineRefusal } from '../limits/gate-line.types.js';

/** The line a gate's claim is for, as its claim statement needs it. */
export interface LineGating {
  type: string;
  key: string;
  /** Declared concurrency (a run-time override in the table decides otherwise). */
  concurrency: number | null;
  /** The declared limits include a rate. */
  paced: boolean;
  /** Rate credits taken for its starts, one a task: the claim checks this instance still holds them all. */
  credits?: { holder: string; taken: number[] };
}

/**
 * A gate's claim of one line's tasks: one claim statement takes them all
 * (the database decides, in it, whether the type is paused, takes the
 * line's concurrency seat, and checks the rate credits are still this
 * instance's), and hands them to the savepoint pass one at a time, in due order.
 *
 * What holds between the starts, without a claim statement each: the claim
 * holds the type's pause lock shared and its instance's lease row locked to
 * its end, so no pause commits and no takeover reaps its credits while it
 * runs. Before each start after the first, the savepoint step's round trip also asks
 * whether a pause() is waiting (pauseWaitingProbe): then, as once it has run
 * GATE_CLAIM_MAX_MS, it starts no more, and the tasks not started are put
 * back as they were (returnUnstarted) and go back to their line (`left`).
 * So a pause waits for one handler, and no transaction outlives a second by
 * more than one handler's run.
 */
export class LineClaims {
  /** Claimed by the statement, in due order. */
  private claimed: ClaimRow[] = [];
  deferred: TaskId[] = [];
  refused: LineRefusal | null = null;
  /** Not started: refused, or the claim stopped before them. Back to their line. */
  left: TaskId[] = [];
  /** Ids it could not lock, still pending (see PassedRow). */
  passed: PassedRow[] = [];
  /** Due, of a type with no handler here: left to an instance that has one. */
  unhandled: TaskId[] = [];
  private index = 0;
  private readonly beganMs = performance.now();
  /** The savepoint step's question before each start after the first: may it go on (no pause waiting)? */
  readonly probe: string;

  constructor(
    private readonly sql: Sql,
    private readonly ids: TaskId[],
    private readonly claim: {
      now: Date;
      noteId: string;
      alone: boolean;
      overdueAfterMs: number;
      handled: readonly string[];
    },
    private readonly line: LineGating,
    literal: (value: string) => string,
  ) {
    this.probe = pauseWaitingProbe(literal(line.type));
  }

  /** The one claim statement. */
  async take(): Promise<void> {
    const { line, claim } = this;
    const rows = await this.sql.rows<ClaimedWire>(
      LINE_CLAIM,
      [
        this.ids,
        claim.now,
        claim.noteId,
        claim.alone,
        claim.overdueAfterMs,
        line.type,
        line.key,
        line.concurrency,
        line.credits?.taken ?? null,
        line.credits?.holder ?? null,
        line.paced,
        claim.handled,
      ],
      'nest_delay_claim_line',
    );
    const result = readClaimed(rows, claim.now);
    if (result.refused) {
      this.refused = result.refused;
      this.left = [...this.ids];
      return;
    }
    this.deferred = result.deferred;
    this.passed = result.passed;
    this.unhandled = result.unhandled;
    this.claimed = result.claimed.sort(
      (a, b) => a.due_at.getTime() - b.due_at.getTime() || compareIds(a.id, b.id),
    );
  }

  /** The next task to start, or undefined once the claim has run its time. */
  next(): ClaimRow | undefined {
    if (this.index > 0 && performance.now() - this.beganMs > GATE_CLAIM_MAX_MS) return undefined;
    return this.claimed[this.index++];
  }

  /** The savepoint step's probe said stop before `row` started: it and those after it go back. */
  stopBefore(row: ClaimRow): void {
    this.index = this.claimed.indexOf(row);
  }

  /** The tasks that started. */
  get started(): ClaimRow[] {
    return this.claimed.slice(0, this.index);
  }

  /**
   * Puts back the claimed tasks that did not start, in the claim's
   * transaction (outside any task's savepoint), so they commit unchanged.
   */
  async putBack(): Promise<void> {
    const unstarted = this.claimed.slice(this.index).map((row) => row.id);
    if (unstarted.length === 0) return;
    await returnUnstarted(this.sql, unstarted, this.claim.now);
    this.left.push(...unstarted);
  }
}

/**
 * A gate's claim: the claim statement, with the line's checks first. Its
 * $6–$12: the type, the key, the declared concurrency, the rate credits
 * taken (null: none), their holder, whether the declared limits include
 * a rate, and the types handled here. The type's pause lock is taken shared first (a pause being
 * committed holds it exclusively: refused), then the type's row is read with
 * FOR KEY SHARE, which returns its latest committed version (a pause or
 * change committed since this statement's snapshot) and blocks no update of
 * it (see limit-statements.ts).
 */
const LINE_CLAIM = claimStatement(
  `     pause_lock AS (
       SELECT pg_try_advisory_xact_lock_shared(${PAUSE_LOCK_CLASS}, hashtext($6)) AS ok
     ), limits AS (
       SELECT l.paused_at, l.overridden, l.concurrency, l.rate_starts,
              l.declared_at, l.declared_concurrency, l.declared_rate_starts
       FROM delay_type_limit l, pause_lock
       WHERE l.type = $6 AND pause_lock.ok
       FOR KEY SHARE OF l
     ), gate AS (
       SELECT NOT (SELECT ok FROM pause_lock) OR l.paused_at IS NOT NULL AS paused,
              -- Set at run time, else declared (stored at boot, else this instance's code).
              CASE WHEN l.overridden THEN l.concurrency
                   ELSE ${declaredColumn('l', 'concurrency', '$8::int')} END AS seats,
              CASE WHEN l.overridden THEN l.rate_starts IS NOT NULL
                   WHEN l.declared_at IS NOT NULL THEN l.declared_rate_starts IS NOT NULL
                   ELSE $11::boolean END AS paced
       FROM (SELECT 1) one LEFT JOIN limits l ON true
     ), line_check AS (
       -- In order, each only if the one before passed: no seat is taken for a paused type.
       SELECT CASE
         WHEN paused THEN 'paused'
         -- Credits verified held, and the instance's lease row locked (FOR KEY
         -- SHARE) until this transaction ends: a takeover, which deletes that
         -- row and reaps the credits in one statement, cannot happen while
         -- this claim's handlers start (releaseExpiredInstances skips it).
         WHEN $9::int[] IS NOT NULL AND NOT (cardinality($9::int[]) = (
           SELECT count(*) FROM delay_limit_credit c
           WHERE c.type = $6 AND c.key = $7 AND c.credit = ANY($9::int[]) AND c.holder = $10
             AND c.used_at = 'infinity'
         ) AND EXISTS (SELECT 1 FROM delay_instance i WHERE i.id = $10 FOR KEY SHARE OF i))
           THEN 'unpaced'
         WHEN $9::int[] IS NULL AND paced IS TRUE THEN 'unpaced'
         WHEN seats IS NOT NULL AND NOT EXISTS (
           SELECT 1 FROM generate_series(0, seats - 1) s
           WHERE pg_try_advisory_xact_lock(${LIMIT_LOCK_CLASS}, ${seatLockKey('$6', '$7', 's')})
         ) THEN 'busy'
       END AS refused
       FROM gate
     )`,
  '$12',
);
