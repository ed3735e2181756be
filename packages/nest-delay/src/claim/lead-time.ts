import type { TaskId } from '../task.types.js';

/**
 * A handler's lead: how long it ran before its first statement (or its
 * end, if it sent none), for the OverlapGauge. One that gets there without
 * the event loop going round in between (its code, then promises that were
 * already settling: TypeORM's own awaits) went straight there, whatever the
 * clock says: cold code, a busy machine or its batch-mates' starts make
 * that take a millisecond at times, and it still has nothing to overlap.
 * Only a handler that waited on the loop (a timer, a socket) leads by the
 * time it waited.
 */
export class Leads {
  private readonly starts = new Map<TaskId, { atMs: number; iteration: number }>();
  private readonly leads = new Map<TaskId, number>();

  /** The attempt of `id` starts now. */
  started(id: TaskId): void {
    this.starts.set(id, { atMs: performance.now(), iteration: loopIteration() });
  }

  /** A statement of `id`'s handler is sent now: its first one ends its lead. */
  statement(id: TaskId): void {
    if (this.leads.has(id)) return;
    const start = this.starts.get(id);
    if (start) this.leads.set(id, leadSince(start));
  }

  /** The lead of `id`'s handler: to its first statement, or to now if it sent none. */
  of(id: TaskId): number {
    const start = this.starts.get(id);
    return this.leads.get(id) ?? (start ? leadSince(start) : 0);
  }
}

function leadSince(start: { atMs: number; iteration: number }): number {
  return loopIteration() === start.iteration ? 0 : performance.now() - start.atMs;
}

let iteration = 0;
let armed = false;

/** A number that changes once the event loop has gone round (a setImmediate, armed only when read). */
function loopIteration(): number {
  if (!armed) {
    armed = true;
    setImmediate(advance);
  }
  return iteration;
}

function advance(): void {
  iteration++;
  armed = false;
}
