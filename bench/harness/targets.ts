/**
 * The project's targets, judged from one run's figures: met, or missed by how much.
 */
import { mib, num } from './format.js';
import { PEERS, type SystemName } from '../systems/system.js';
import type { WheelFigure } from '../workloads/wheel.js';
import type { BurstSize } from '../workloads/burst.js';
import type { ScheduleFigure } from '../workloads/schedule.js';
import type { DueRun } from './run-system.js';
import type { IdleFigure } from '../workloads/idle.js';
import type { ScaleCase } from '../workloads/scale.js';
import type { RecoveryResult } from '../workloads/recovery.js';
import { byTick, type RetentionResult } from '../workloads/retention.js';
import { middleAndEnd, type SoakResult } from '../workloads/soak.js';
import type { RecurringResult } from '../workloads/recurring.js';

/** The spread's lateness targets (ms), which recurring occurrences are held to as well. */
const SPREAD_P50_MS = 3;
const SPREAD_P99_MS = 10;

export interface TargetVerdict {
  target: string;
  measured: string;
  met: boolean;
  /** How far off, when missed. */
  missedBy?: string;
}

function atLeast(
  target: string,
  measured: number,
  wanted: number,
  unit: string,
  detail: string,
): TargetVerdict {
  const met = measured >= wanted;
  return {
    target,
    measured: detail,
    met,
    missedBy: met
      ? undefined
      : `${num(((wanted - measured) / wanted) * 100, 0)}% short (${num(measured, 2)}${unit} vs ${num(wanted, 2)}${unit})`,
  };
}

function atMost(
  target: string,
  measured: number,
  wanted: number,
  unit: string,
  detail: string,
): TargetVerdict {
  const met = measured <= wanted;
  return {
    target,
    measured: detail,
    met,
    missedBy: met
      ? undefined
      : `${num(((measured - wanted) / wanted) * 100, 0)}% over (${num(measured, 2)}${unit} vs ${num(wanted, 2)}${unit})`,
  };
}

export function judge(results: Record<string, any>): TargetVerdict[] {
  const verdicts: TargetVerdict[] = [];
  const wheel = results.wheel?.figures as WheelFigure[] | undefined;
  if (wheel) {
    for (const n of [...new Set(wheel.map((f) => f.entries))]) {
      const w = wheel.find((f) => f.structure === 'TimingWheel' && f.entries === n)!;
      const t = wheel.find((f) => f.structure === 'setTimeout' && f.entries === n)!;
      const addRatio = w.addPerSecond / t.addPerSecond;
      const byteRatio = w.bytesPerEntry / t.bytesPerEntry;
      verdicts.push(
        atLeast(
          `Wheel add ≥ 3× setTimeout (${num(n)})`,
          addRatio,
          3,
          '×',
          `${num(addRatio, 2)}× (${num(w.addPerSecond)}/s vs ${num(t.addPerSecond)}/s)`,
        ),
      );
      verdicts.push(
        atMost(
          `Wheel bytes/entry ≤ 0.4× setTimeout (${num(n)})`,
          byteRatio,
          0.4,
          '×',
          `${num(byteRatio, 2)}× (${num(w.bytesPerEntry, 0)} B vs ${num(t.bytesPerEntry, 0)} B)`,
        ),
      );
    }
  }
  const scheduled = (results.schedule?.figures as ScheduleFigure[] | undefined)?.find(
    (f) => f.system === 'project' && f.bare,
  );
  if (scheduled?.bare) {
    const { bare } = scheduled;
    for (const [target, api, floor, wanted] of [
      [
        'schedule() ≥ 0.95× a bare INSERT per call',
        scheduled.onePerCallPerSecond,
        bare.onePerCallPerSecond,
        0.95,
      ],
      [
        'scheduleMany() ≥ 0.85× a bare multi-row INSERT',
        scheduled.bulkPerSecond,
        bare.bulkPerSecond,
        0.85,
      ],
    ] as const) {
      verdicts.push(
        atLeast(
          target,
          api / floor,
          wanted,
          '×',
          `${num(api / floor, 2)}× (${num(api)}/s vs ${num(floor)}/s)`,
        ),
      );
    }
  }
  const sizes = results.burst?.sizes as BurstSize[] | undefined;
  for (const size of sizes ?? []) {
    const project = size.runs.find((r) => r.system === 'project');
    if (!project) continue;
    const peers = size.runs.filter((r) => r.system !== 'project');
    const best = peers.reduce((a, b) =>
      (b.effectsPerSecond ?? 0) > (a.effectsPerSecond ?? 0) ? b : a,
    );
    const eps = project.effectsPerSecond ?? 0;
    const libraries = peers.filter((r) => r.system !== 'cron-scan');
    const bestLibrary = libraries.reduce((a, b) =>
      (b.effectsPerSecond ?? 0) > (a.effectsPerSecond ?? 0) ? b : a,
    );
    const bare = size.bare.find((b) => b.mode === 'one-per-transaction');
    const batchLimit = size.bare.find((b) => b.mode === 'batch-50');
    const twiceBest = 2 * (best.effectsPerSecond ?? 0);
    const versusBest = atLeast(
      `Burst ${num(size.count)}: effects/s ≥ 2× best peer`,
      eps / (best.effectsPerSecond ?? 1),
      2,
      '×',
      `${num(eps)}/s vs ${best.label} ${num(best.effectsPerSecond ?? 0)}/s = ${num(eps / (best.effectsPerSecond ?? 1), 2)}×`,
    );
    // Every system runs the same one-statement effect per task, so none can go
    // faster than that statement alone, 50 to a transaction, on the same pool.
    if (!versusBest.met && batchLimit && twiceBest > batchLimit.effectsPerSecond)
      versusBest.missedBy += `; out of reach in this run: 2× ${best.label} = ${num(twiceBest)}/s exceeds the bare batch-50 limit of ${num(batchLimit.effectsPerSecond)}/s`;
    verdicts.push(versusBest);
    verdicts.push(
      atLeast(
        `Burst ${num(size.count)}: (for reference) effects/s ≥ 2× best queue library`,
        eps / (bestLibrary.effectsPerSecond ?? 1),
        2,
        '×',
        `${num(eps)}/s vs ${bestLibrary.label} ${num(bestLibrary.effectsPerSecond ?? 0)}/s = ${num(eps / (bestLibrary.effectsPerSecond ?? 1), 2)}×`,
      ),
    );
    if (bare)
      verdicts.push(
        atLeast(
          `Burst ${num(size.count)}: effects/s ≥ bare one-transaction-per-effect`,
          eps / bare.effectsPerSecond,
          1,
          '×',
          `${num(eps)}/s vs ${num(bare.effectsPerSecond)}/s = ${num(eps / bare.effectsPerSecond, 2)}×`,
        ),
      );
    const first = project.outcome.lateness?.min;
    if (first !== undefined)
      verdicts.push(
        atMost(
          `Burst ${num(size.count)}: first effect within 10 ms of the due instant`,
          first,
          10,
          ' ms',
          `${num(first)} ms`,
        ),
      );
    if (size.observed?.effectsPerSecond && eps) {
      const kept = size.observed.effectsPerSecond / eps;
      verdicts.push(
        atLeast(
          `Burst ${num(size.count)}: metrics + events on within 5% of off`,
          kept,
          0.95,
          '×',
          `${num(size.observed.effectsPerSecond)}/s vs ${num(eps)}/s = ${num(kept, 3)}×`,
        ),
      );
    }
    const clean = project.outcome.duplicates === 0 && project.outcome.missing === 0;
    verdicts.push({
      target: `Burst ${num(size.count)}: zero duplicates, zero missing`,
      measured: `${project.outcome.duplicates} duplicates, ${project.outcome.missing} missing`,
      met: clean,
      missedBy: clean ? undefined : `${project.outcome.duplicates + project.outcome.missing} tasks`,
    });
  }
  const spread = results.spread?.runs as DueRun[] | undefined;
  const floor = spread?.find((r) => r.system === 'timeout-floor')?.outcome.lateness;
  for (const run of (spread ?? []).filter((r) => r.system === 'project')) {
    const l = run.outcome.lateness;
    if (!l) continue;
    const vsFloor = floor ? ` (floor ${num(floor.p50)} / ${num(floor.p99)} ms)` : '';
    verdicts.push(
      atMost(
        `Spread, ${run.label}: p50 lateness ≤ ${SPREAD_P50_MS} ms`,
        l.p50,
        SPREAD_P50_MS,
        ' ms',
        `p50 ${num(l.p50)} ms${vsFloor}`,
      ),
      atMost(
        `Spread, ${run.label}: p99 lateness ≤ ${SPREAD_P99_MS} ms`,
        l.p99,
        SPREAD_P99_MS,
        ' ms',
        `p99 ${num(l.p99)} ms${vsFloor}`,
      ),
      atLeast(`Spread, ${run.label}: never early`, l.min, 0, ' ms', `earliest ${num(l.min)} ms`),
    );
    const all = run.outcome.duplicates === 0 && run.outcome.missing === 0;
    verdicts.push({
      target: `Spread, ${run.label}: as many effects as tasks`,
      measured: `${run.outcome.effected} of ${run.count}`,
      met: all,
      missedBy: all
        ? undefined
        : `${run.outcome.duplicates} duplicates, ${run.outcome.missing} missing`,
    });
  }
  verdicts.push(...recurringVerdicts(results.recurring as RecurringResult | undefined));
  const retention = results.retention as RetentionResult | undefined;
  if (retention?.runs?.length) {
    for (const v of byTick(retention)) {
      const tick = v.tickMs >= 1000 ? `${v.tickMs / 1000} s` : `${v.tickMs} ms`;
      verdicts.push(
        atMost(
          `Retention, ${tick} tick: spread p99 while pruning ≤ 1.2× quiet`,
          v.ratio,
          1.2,
          '×',
          `${num(v.ratio, 2)}× (${num(v.pruningP99)} ms vs ${num(v.quietP99)} ms, means of ${retention.rounds})`,
        ),
      );
      verdicts.push({
        target: `Retention, ${tick} tick: effects = tasks, zero duplicates`,
        measured: v.clean ? 'every run' : 'not every run',
        met: v.clean,
        missedBy: v.clean ? undefined : 'see the retention table',
      });
    }
  }
  const soak = results.soak as SoakResult | undefined;
  if (soak?.samples?.length) {
    const { middle, end } = middleAndEnd(soak);
    const sizes: Array<[string, number, number]> = [
      ['delayed_task heap', middle.tableBytes, end.tableBytes],
      ...Object.keys(end.indexBytes).map((i): [string, number, number] => [
        `index ${i}`,
        middle.indexBytes[i] ?? 0,
        end.indexBytes[i],
      ]),
    ];
    for (const [name, m, e] of sizes)
      verdicts.push(
        atMost(
          `Soak: ${name} at the end ≤ 1.2× the middle`,
          e / m,
          1.2,
          '×',
          `${num(e / m, 2)}× (${num(e / 1024, 0)} KiB at ${end.atSeconds} s vs ${num(m / 1024, 0)} KiB at ${middle.atSeconds} s)`,
        ),
      );
  }
  const idleFigures = results.idle?.figures as IdleFigure[] | undefined;
  const idle = idleFigures?.find((f) => f.system === 'project');
  const nestFloor = idleFigures?.find((f) => f.system === 'nest-floor');
  const peers = (idleFigures ?? []).filter((f) => PEERS.includes(f.system as SystemName));
  if (idle && peers.length > 0) {
    const best = peers.reduce((a, b) => (b.rssBytes < a.rssBytes ? b : a));
    const over = (idle.rssBytes - best.rssBytes) / 2 ** 20;
    const verdict = atMost(
      'Idle: RSS at rest within 10 MiB of the best peer',
      over,
      10,
      ' MiB',
      `${mib(idle.rssBytes)} vs ${best.system} ${mib(best.rssBytes)} (${num(over, 1)} MiB over)`,
    );
    // Why, in numbers: how much of the gap an app with no DelayModule already has.
    if (!verdict.met && nestFloor) {
      const floorOver = (nestFloor.rssBytes - best.rssBytes) / 2 ** 20;
      verdict.missedBy += `; Nest + TypeORM alone, no DelayModule, is ${num(floorOver, 1)} MiB over ${best.system}`;
    }
    verdicts.push(verdict);
  }
  if (idle && nestFloor) {
    // The library's own share: Nest + TypeORM alone sit 25–30 MiB above a bare pg process.
    const over = (idle.rssBytes - nestFloor.rssBytes) / 2 ** 20;
    verdicts.push(
      atMost(
        'Idle: RSS at rest ≤ the Nest + TypeORM floor + 10 MiB',
        over,
        10,
        ' MiB',
        `${mib(idle.rssBytes)} vs floor ${mib(nestFloor.rssBytes)} (${num(over, 1)} MiB over)`,
      ),
    );
  }
  if (idle) {
    verdicts.push(
      atMost(
        'Idle: < 1 statement/s',
        idle.statementsPerSecond,
        1,
        '/s',
        `${num(idle.statementsPerSecond, 2)} statements/s`,
      ),
    );
    const core = idle.cpuSeconds / idle.seconds;
    verdicts.push(
      atMost(
        'Idle: CPU near zero (≤ 1% of a core)',
        core * 100,
        1,
        '%',
        `${num(idle.cpuSeconds, 2)} CPU s in ${idle.seconds} s = ${num(core * 100, 2)}% of a core`,
      ),
    );
  }
  const scale = results.scale?.cases as ScaleCase[] | undefined;
  if (scale && scale.length === 2) {
    const r = scale[1].rssAfterStart / scale[0].rssAfterStart;
    verdicts.push(
      atMost(
        'Scale: RSS with 1,000,000 pending ≤ 1.2× RSS with 10,000',
        r,
        1.2,
        '×',
        `${num(r, 2)}×`,
      ),
    );
  }
  const recovery = results.recovery as RecoveryResult | undefined;
  const burstLarge = sizes?.[sizes.length - 1]?.runs.find((r) => r.system === 'project');
  // Both rates over the span from first to last effect: the burst's clock starts
  // at its due instant, not at a process start, so boot time is left out of both.
  const recoveryRate = recovery?.drainEffectsPerSecond;
  if (recovery && recoveryRate && burstLarge?.effectsPerSecond) {
    verdicts.push(
      atLeast(
        'Recovery: drains at least at the burst rate',
        recoveryRate / burstLarge.effectsPerSecond,
        1,
        '×',
        `${num(recoveryRate)}/s vs burst ${num(burstLarge.effectsPerSecond)}/s, first to last effect = ${num(recoveryRate / burstLarge.effectsPerSecond, 2)}× (from the app's start: ${num(recovery.effectsPerSecond ?? 0)}/s)`,
      ),
    );
  }
  if (recovery) {
    verdicts.push({
      target: 'Recovery: zero duplicates',
      measured: `${recovery.outcome.duplicates} duplicates, ${recovery.outcome.missing} missing`,
      met: recovery.outcome.duplicates === 0,
      missedBy: recovery.outcome.duplicates
        ? `${recovery.outcome.duplicates} duplicates`
        : undefined,
    });
  }
  return verdicts;
}

/**
 * Recurring occurrences are held to the spread's p99 target, beside the
 * one-off tasks of the same run; the set whose schedules all fall due at the
 * same whole second is judged for reference (tasks due at one instant are
 * the burst's case). At rest with 1,000 schedules: the idle targets.
 */
function recurringVerdicts(result: RecurringResult | undefined): TargetVerdict[] {
  const verdicts: TargetVerdict[] = [];
  if (!result?.runs) return verdicts;
  const floor = result.floor?.outcome.lateness;
  const alone = result.runs.find((r) => r.key === 'none')?.oneOff.lateness;
  const beside = [
    ...(floor ? [`floor ${num(floor.p50)} / ${num(floor.p99)} ms`] : []),
    ...(alone ? [`one-offs alone ${num(alone.p50)} / ${num(alone.p99)} ms`] : []),
  ];
  const vsFloor = beside.length ? ` (${beside.join('; ')})` : '';
  for (const run of result.runs) {
    if (run.key === 'none') continue;
    const name = run.key === 'phases' ? 'phases spread' : 'all due each whole second';
    const reference = run.key === 'phases' ? '' : ' (for reference)';
    const o = run.occurrences;
    if (o.lateness)
      verdicts.push(
        atMost(
          `Recurring, ${name}: occurrences' p99 lateness ≤ ${SPREAD_P99_MS} ms${reference}`,
          o.lateness.p99,
          SPREAD_P99_MS,
          ' ms',
          `p50 ${num(o.lateness.p50)} / p99 ${num(o.lateness.p99)} ms${vsFloor}`,
        ),
      );
    const l = run.oneOff.lateness;
    if (l)
      verdicts.push(
        atMost(
          `Recurring, ${name}: one-off tasks beside them, p99 lateness ≤ ${SPREAD_P99_MS} ms${reference}`,
          l.p99,
          SPREAD_P99_MS,
          ' ms',
          `p50 ${num(l.p50)} / p99 ${num(l.p99)} ms${vsFloor}`,
        ),
      );
    const earliest = Math.min(o.lateness?.min ?? Infinity, l?.min ?? Infinity);
    if (Number.isFinite(earliest))
      verdicts.push(
        atLeast(
          `Recurring, ${name}: never early (occurrences and one-offs)`,
          earliest,
          0,
          ' ms',
          `earliest ${num(earliest)} ms`,
        ),
      );
    const once = o.distinct === o.effects && o.effects === o.expected && o.matched === o.expected;
    verdicts.push({
      target: `Recurring, ${name}: each occurrence exactly once`,
      measured: `${num(o.effects)} runs, ${num(o.distinct)} distinct, ${num(o.expected)} expected`,
      met: once,
      missedBy: once
        ? undefined
        : `${o.duplicates} duplicates, ${o.missing} missing, ${o.unexpected} unexpected`,
    });
  }
  const many = result.idle?.find((i) => i.schedules > 0);
  const none = result.idle?.find((i) => i.schedules === 0);
  if (many) {
    const base = none ? `; ${num(none.statementsPerSecond, 2)} with none` : '';
    verdicts.push(
      atMost(
        `Recurring at rest, ${num(many.schedules)} schedules: < 1 statement/s`,
        many.statementsPerSecond,
        1,
        '/s',
        `${num(many.statementsPerSecond, 2)} statements/s${base}`,
      ),
    );
    const core = many.cpuSeconds / many.seconds;
    verdicts.push(
      atMost(
        `Recurring at rest, ${num(many.schedules)} schedules: CPU near zero (≤ 1% of a core)`,
        core * 100,
        1,
        '%',
        `${num(many.cpuSeconds, 2)} CPU s in ${many.seconds} s = ${num(core * 100, 2)}% of a core${none ? ` (${num((none.cpuSeconds / none.seconds) * 100, 2)}% with none)` : ''}`,
      ),
    );
  }
  return verdicts;
}
