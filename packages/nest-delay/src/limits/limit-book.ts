import type { TypeLimitRow } from './limit-statements.js';
import { isLimited, NO_LIMIT, type ResolvedLimit } from '../task-limit.js';

/** One type's limits as this instance last knew them. */
export interface TypeLimits {
  /** What its handlers declare: as the last instance to boot stored it, else this instance's code. */
  declared: ResolvedLimit;
  /** What was set at run time in its place, if anything. */
  override: ResolvedLimit | null;
  /** In force: the override, else the declared. */
  effective: ResolvedLimit;
  pausedAt: Date | null;
}

/**
 * Which types are limited or paused, for routing fired tasks and pacing the
 * gate's lines. A copy only: the claims read `delay_type_limit` themselves,
 * so a change holds from the next claim on every instance.
 */
export class LimitBook {
  private rows = new Map<string, TypeLimitRow>();

  constructor(private readonly declaredOf: (type: string) => ResolvedLimit | undefined) {}

  replace(rows: TypeLimitRow[]): void {
    this.rows = new Map(rows.map((row) => [row.type, row]));
  }

  /** A change made here, before the next read. */
  apply(row: Partial<TypeLimitRow> & { type: string }): void {
    const current = this.rows.get(row.type) ?? {
      type: row.type,
      paused_at: null,
      overridden: false,
      concurrency: null,
      rate_starts: null,
      rate_per_ms: null,
      updated_at: new Date(0),
      declared_concurrency: null,
      declared_rate_starts: null,
      declared_rate_per_ms: null,
      declared_per_key: false,
      declared_at: null,
      declared_by: null,
    };
    this.rows.set(row.type, { ...current, ...row });
  }

  of(type: string): TypeLimits {
    const row = this.rows.get(type);
    // As stored at boot by the last instance to boot, else this instance's code.
    const declared = row?.declared_at
      ? stored(row.declared_concurrency, row.declared_rate_starts, row.declared_rate_per_ms)
      : (this.declaredOf(type) ?? NO_LIMIT);
    const override = row?.overridden
      ? stored(row.concurrency, row.rate_starts, row.rate_per_ms)
      : null;
    return {
      declared,
      override,
      effective: override ?? declared,
      pausedAt: row?.paused_at ?? null,
    };
  }

  /** Tasks of this type go through the gate. */
  gates(type: string): boolean {
    const limits = this.of(type);
    return limits.pausedAt !== null || isLimited(limits.effective);
  }
}

/** A limit from its stored columns (a rate needs both of its own). */
function stored(
  concurrency: number | null,
  starts: number | null,
  perMs: string | null,
): ResolvedLimit {
  return {
    concurrency,
    rate: starts !== null && perMs !== null ? { starts, perMs: Number(perMs) } : null,
  };
}
