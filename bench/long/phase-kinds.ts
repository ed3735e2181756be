/** The phases, in the order a run goes through them (the public harness's names). */
export const PHASE_KINDS = [
  'clean',
  'idle-in-tx',
  'active-readers',
  'high-load',
  'kill-worker',
  'postgres-restart',
  'pg-backend-kill',
  'pool-exhaustion',
  'recovery',
] as const;

export type PhaseKind = (typeof PHASE_KINDS)[number];

/** Offered load relative to --rate. */
export function loadFactor(kind: PhaseKind): number {
  return kind === 'high-load' ? 1.5 : 1;
}

/**
 * Length relative to --phase-seconds: the idle-in-transaction holder stays
 * 1.5 phases (ten minutes at the full run's 400 s), as the scenario asks.
 */
export function lengthFactor(kind: PhaseKind): number {
  return kind === 'idle-in-tx' ? 1.5 : 1;
}
