import { errorText } from '../delay.messages.js';
import type { DelayContext } from '../context/delay-context.js';
import type { GateClaim, GateItem, GateOutcome, LimitGate } from './limit-gate.js';
import type { LineRefusal } from './gate-line.types.js';
import type { TaskId } from '../task.types.js';
import { STAMP_TRIES } from '../context/tuning.js';
import {
  reapCredits,
  returnCredit,
  stampCredits,
  takeCredits,
  type StartedCredit,
  type TakenCredit,
} from './credit-statements.js';

/** A gate's claim: its line, and what to do once each handler started. */
export interface LineClaim {
  gated: GateClaim;
  /** The rate credits taken for its starts, one a task (undefined: none taken, no rate known here). */
  credits?: number[];
  onStart?: () => void;
}

/** What a gate's claim came to, as the gate needs it. */
export interface LineClaimEnd {
  claimedIds: Set<TaskId>;
  /** Not tried: a refusal, or the claim's time ran out. */
  left: TaskId[];
  /** Their last attempt was cut off: each runs alone. */
  deferred: TaskId[];
  refused: LineRefusal | null;
}

/** The claim side, as a gate's claim uses it (ClaimRunner): limits sit below claims and name only this. */
export interface LineClaimRunner {
  /** The time limits are kept in: the database's (null) unless the module runs on a clock of a test's. */
  limitNowMs(): number | null;
  run(
    ids: TaskId[],
    alone: boolean,
    line: LineClaim,
  ): Promise<LineClaimEnd | 'cut-off' | undefined>;
  holdAll(ids: TaskId[], dueAtMs: number, type?: string): void;
  retrySoonMs(): number;
}

/**
 * A gate's claim of one line's tasks: rate credits first, in a statement of
 * their own (none free: the line waits), then the claim (ClaimRunner: line
 * check, one claim statement, handlers one at a time under savepoints). A
 * credit is stamped once its start happened; those unused are put back.
 */
export class GateClaims {
  /** Credits whose starts happened, to stamp: one statement in flight takes all queued. */
  private queued: StartedCredit[] = [];
  private flushing: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly ctx: DelayContext,
    private readonly gate: LimitGate,
    private readonly runner: LineClaimRunner,
  ) {}

  /** A credit's stamp is queued or under way. */
  get stamping(): boolean {
    return this.flushing !== undefined;
  }

  /** Credits this instance left in flight under the same id before a restart. */
  async start(): Promise<void> {
    await reapCredits(this.ctx.db.pool, [this.ctx.options.instanceId]);
  }

  /** Waits for the stamps queued and under way (each batch tried once more at most). */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.flushing;
  }

  async run(gated: GateClaim): Promise<void> {
    const { ctx, runner } = this;
    const { line } = gated;
    const holder = ctx.options.instanceId;
    let outcome: GateOutcome = { kind: 'done' };
    let back: GateItem[] = [];
    let credits: TakenCredit[] | undefined;
    let used = 0;
    let items = gated.items;
    try {
      if (gated.effective.rate) {
        const answer = await takeCredits(
          ctx.db.pool,
          line.type,
          line.key,
          gated.declared.rate,
          holder,
          runner.limitNowMs(),
          items.length,
        );
        this.gate.creditTaken(gated);
        if (!answer.unlimited) {
          credits = answer.taken;
          if (credits.length < items.length) {
            // The rest wait for the next credit to free.
            back = items.slice(credits.length);
            items = items.slice(0, credits.length);
            outcome = { kind: 'rate', nextFreeMs: answer.nextFreeMs };
          }
          if (items.length === 0) return;
        }
      }
      const taken = credits;
      const ended = await runner.run(
        items.map((item) => item.id),
        items[0].alone,
        {
          gated: { ...gated, items },
          // The claim checks they are all still this instance's.
          credits: taken?.map((credit) => credit.credit),
          onStart: () => {
            const credit = taken?.[used++];
            if (!credit) return;
            this.queued.push({ type: line.type, key: line.key, credit: credit.credit });
            this.flushing ??= this.flush();
          },
        },
      );
      if (ended === 'cut-off') {
        if (outcome.kind !== 'rate') outcome = { kind: 'ran' };
      } else if (ended) {
        const left = new Set(ended.left);
        const deferred = new Set(ended.deferred);
        // Not tried (a refusal, or its time ran out): back to the line as they were.
        back.push(...items.filter((item) => left.has(item.id)));
        // Cut off last time: again, alone.
        back.push(
          ...items
            .filter((item) => deferred.has(item.id))
            .map((item) => ({ ...item, alone: true })),
        );
        if (ended.refused === 'unpaced') outcome = { kind: 'stale' };
        else if (ended.refused) outcome = { kind: ended.refused };
        else if (outcome.kind !== 'rate' && ended.claimedIds.size > 0) outcome = { kind: 'ran' };
      }
    } catch (error) {
      ctx.logger.error(`Taking rate credits for ${line.type} failed: ${errorText(error)}`);
      // All of them, those set aside for want of a credit too: nothing may
      // leave the gate for nowhere (a task that ran meanwhile is let go by its claim).
      runner.holdAll(
        gated.items.map((item) => item.id),
        runner.retrySoonMs(),
        line.type,
      );
      back = [];
    } finally {
      let returned = false;
      for (const credit of credits?.slice(used) ?? [])
        await returnCredit(ctx.db.pool, line.type, line.key, credit, holder).then(
          () => (returned = true),
          (error: unknown) =>
            ctx.logger.error(
              `Putting back an unused rate credit of ${line.type} failed (it frees when this instance restarts or is taken over): ${errorText(error)}`,
            ),
        );
      this.gate.ended(gated, outcome, back);
      if (returned) this.gate.creditSettled(line.type, line.key, true);
    }
  }

  private async flush(): Promise<void> {
    try {
      while (this.queued.length > 0) await this.stamp(this.queued.splice(0));
    } finally {
      this.flushing = undefined;
    }
  }

  /** A batch that fails is tried again a few times; then its credits stay in flight (the safe side) until reapCredits. */
  private async stamp(batch: StartedCredit[]): Promise<void> {
    const { ctx } = this;
    for (let tries = 1; ; tries++) {
      try {
        await stampCredits(ctx.db.pool, batch, ctx.options.instanceId, this.runner.limitNowMs());
        break;
      } catch (error) {
        if (tries >= STAMP_TRIES || (this.stopped && tries >= 2)) {
          ctx.logger.error(
            `Stamping ${batch.length} rate credit(s) of ${batch[0].type} failed; they stay in use until this instance restarts or is taken over: ${errorText(error)}`,
          );
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 200 * tries));
      }
    }
    const lines = new Map(batch.map((c) => [`${c.type}\u001f${c.key}`, c]));
    for (const { type, key } of lines.values()) this.gate.creditSettled(type, key, false);
  }
}
