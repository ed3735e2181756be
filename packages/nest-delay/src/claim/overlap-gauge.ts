/**
 * Which task types gain from running a claim's handlers at once
 * (handlersPerClaim): those whose handlers do something else first (an
 * outside call, a wait) before their first statement on the transaction.
 * A handler whose first statement comes at once takes the turn as it
 * starts, so its batch-mates only wait behind it, and running them together
 * then costs a burst CPU for nothing (about an eighth more a task,
 * bench/HISTORY.md): such a claim runs its handlers one after another, as
 * it would with `handlersPerClaim: 1`. The transaction sees the same either
 * way. Learnt from every optimistic pass (the lead, lead-time.ts: how long
 * a handler waited on the event loop before its first statement), so a type
 * whose handlers change what they do first is followed; a type not seen yet
 * runs one after another, where its lead is measured alone.
 */
export class OverlapGauge {
  private readonly leads = new Map<string, number>();

  /** Whether a claim of tasks of these types runs its handlers together. */
  together(types: Iterable<string>): boolean {
    for (const type of types) if ((this.leads.get(type) ?? 0) >= OVERLAP_MIN_MS) return true;
    return false;
  }

  /** A handler of `type` had a lead of `leadMs`. */
  lead(type: string, leadMs: number): void {
    const seen = this.leads.get(type);
    this.leads.set(type, seen === undefined ? leadMs : seen + WEIGHT * (leadMs - seen));
  }
}

/**
 * A lead below this gains nothing worth the turns. A handler that goes
 * straight to its statement leads by 0 (lead-time.ts); an outside call or a
 * timer takes a millisecond or more.
 */
const OVERLAP_MIN_MS = 0.25;
/** Weight of the newest lead in the moving average: about the last five count. */
const WEIGHT = 0.2;
