import type { TypeCounts } from '../claim/claim-outcomes.js';

/** An advance that reached its `maxSteps` before the end of its span: what fired most, and what to do. */
export function runawayAdvance(stopped: {
  call: string;
  maxSteps: number;
  start: number;
  now: number;
  target: number;
  ran: { byType: Record<string, TypeCounts> };
  schedules: Array<{ name: string; n: number }>;
}): string {
  const { call, maxSteps, start, now, target, ran, schedules } = stopped;
  const runs = (c: TypeCounts) => c.executed + c.failed + c.deadLettered + c.snoozed + c.skipped;
  const types = Object.entries(ran.byType)
    .map(([type, counts]) => ({ type, n: runs(counts) }))
    .sort((a, b) => b.n - a.n || a.type.localeCompare(b.type))
    .slice(0, 3);
  const named = [
    schedules.length > 0
      ? `schedule ${schedules.map((s) => `${s.name} (${s.n} occurrences)`).join(', ')}`
      : undefined,
    types.length > 0 ? `type ${types.map((t) => `${t.type} (${t.n} runs)`).join(', ')}` : undefined,
  ].filter(Boolean);
  return (
    `DelayTester.${call} stopped after ${maxSteps} steps (maxSteps) at ${iso(now)}, ` +
    `${target - now} ms short of ${iso(target)} (started at ${iso(start)}). ` +
    `What fired most: ${named.join('; ') || 'nothing ran (tasks fell due that no step could run)'}. ` +
    `Leave the schedules out of this move ({ schedules: false }), pause one ` +
    `(DelaySchedules.pause(name)), move less time, or raise the cap ({ maxSteps }).`
  );
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
