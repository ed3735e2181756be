import type { TypeCounts } from '../claim/claim-runner.js';

/** What an advance that reached its `maxSteps` found in its span, most first (at most three each). */
export interface RunawaySpan {
  call: string;
  maxSteps: number;
  start: number;
  now: number;
  target: number;
  ran: { byType: Record<string, TypeCounts> };
  /** Schedules by occurrences due in the span. */
  schedules: Array<{ name: string; n: number }>;
  /** Types by tasks due in the span and still pending (waiting for a pause or a limit). */
  waiting: Array<{ type: string; n: number }>;
}

const OUTCOMES = ['executed', 'failed', 'deadLettered', 'snoozed', 'skipped'] as const;

/** An advance that reached its `maxSteps`: what stepped the clock so often, and what to do about it. */
export function runawayAdvance(stopped: RunawaySpan): string {
  const { call, maxSteps, start, now, target, ran, schedules, waiting } = stopped;
  const types = Object.entries(ran.byType)
    .map(([type, counts]) => ({ type, counts, n: OUTCOMES.reduce((n, o) => n + counts[o], 0) }))
    .sort((a, b) => b.n - a.n || a.type.localeCompare(b.type))
    .slice(0, 3);
  const named = [
    schedules.length > 0
      ? `schedule ${schedules.map((s) => `${s.name} (${s.n} occurrences)`).join(', ')}`
      : undefined,
    types.length > 0
      ? `type ${types.map((t) => `${t.type} (${t.n} runs: ${outcomes(t.counts)})`).join(', ')}`
      : undefined,
  ].filter(Boolean);
  const fired =
    named.length > 0
      ? `What fired most: ${named.join('; ')}. `
      : waiting.length > 0
        ? `Nothing ran: tasks fell due and waited, of type ${waiting.map((w) => `${w.type} (${w.n})`).join(', ')}, each a step (a paused or limited type: DelayLimits.resume, or move less time). `
        : 'Nothing ran. ';
  const remedy =
    schedules.length > 0
      ? `Leave the schedules out of this move ({ schedules: false }), pause one (DelaySchedules.pause('${schedules[0].name}')), move less time, or raise the cap ({ maxSteps }).`
      : types.length > 0
        ? `Each run that makes the task due again within the span (a snooze, a retry, a task that schedules another) is a step: move less time, or raise the cap ({ maxSteps }).`
        : 'Move less time, or raise the cap ({ maxSteps }).';
  return (
    `DelayTester.${call} stopped after ${maxSteps} steps (maxSteps) at ${iso(now)}, ` +
    `${target - now} ms short of ${iso(target)} (started at ${iso(start)}). ` +
    fired +
    remedy
  );
}

/** `3 executed, 1 failed`: the outcomes that happened. */
function outcomes(counts: TypeCounts): string {
  return OUTCOMES.filter((o) => counts[o] > 0)
    .map((o) => `${counts[o]} ${o}`)
    .join(', ');
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
