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
export interface LeadStart {
  atMs: number;
  iteration: number;
}

export function leadStart(): LeadStart {
  return { atMs: performance.now(), iteration: loopIteration() };
}

/** The lead of a handler that started at `start` and got to its first statement (or its end) now. */
export function leadSince(start: LeadStart): number {
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
