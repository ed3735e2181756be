import { Inject, Injectable } from '@nestjs/common';
import { CLOCK, DelayLimits, type Clock } from '../index.js';
import { toTypeLimitView, type TypeLimitView } from './type-limit.views.js';

/** How long one read of the task types serves every open stream (by the app's clock). */
export const TYPES_FRESH_MS = 2_000;

/**
 * The task types with their limits and waiting counts, for the live stream:
 * one `DelayLimits.list()` (two statements, one of them a count of due
 * pending tasks) serves every open page of this instance for TYPES_FRESH_MS,
 * and a read under way is joined rather than repeated, so a hundred open
 * pages cost what one does. An admin change here forgets the read at once.
 */
@Injectable()
export class TypeLimitsReader {
  private last: { atMs: number; read: Promise<TypeLimitView[]> } | undefined;

  constructor(
    private readonly limits: DelayLimits,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  read(): Promise<TypeLimitView[]> {
    const nowMs = this.clock.now();
    if (this.last && nowMs - this.last.atMs < TYPES_FRESH_MS && nowMs >= this.last.atMs)
      return this.last.read;
    const read = this.limits.list().then((list) => list.map(toTypeLimitView));
    const entry = { atMs: nowMs, read };
    this.last = entry;
    // A failed read is not kept: the next snapshot tries again.
    read.catch(() => {
      if (this.last === entry) this.last = undefined;
    });
    return read;
  }

  /** Something changed here: the next read goes to the database. */
  forget(): void {
    this.last = undefined;
  }
}
