/**
 * The Markdown of a long run: the charts, one row per system and phase, the
 * recovery and growth figures beside their targets, then the ledger.
 */
import type { LongOptions } from './options.js';
import type { PlotName } from './plots.js';
import type { LatenessSplit } from './phase-record.js';
import type { SystemRecord } from './run-system.js';

const sign = (n: number) => `${n > 0 ? '+' : ''}${n}`;
const mb = (bytes: number) => (bytes / 1048576).toFixed(1);
/** null: not back within the run; undefined: not measured (after the last phase). */
const seconds = (s: number | null | undefined) =>
  s === undefined ? 'n/a' : s === null ? '–' : `${s}`;

const PLOT_TITLES: Record<PlotName, string> = {
  throughput: 'effects per second against offered',
  lateness: 'lateness p50 and p99 per 10 s',
  'dead-tuples': 'dead tuples',
  rss: 'RSS per instance',
};

/** The targets of issue 29: measured and shown beside them, never asserted. */
function summary(systems: SystemRecord[]): string[] {
  const lines = [
    '',
    'Recovery and growth (measured, not asserted; to within one sample: a phase that did no harm reads as ' +
      'the time to the next sample; – means not within the run):',
    '',
    '| system | back to offered after a phase: the slowest, s (target ≤ 60) | dead tuples back to the clean level after idle-in-tx, s (target ≤ 300) | RSS growth per instance: the lowest of its 5 s samples in the last phase against the first clean phase (target ≤ 10%) |',
    '| --- | --- | ---: | --- |',
  ];
  for (const s of systems) {
    const timed = s.phases.flatMap((p) =>
      p.recovery?.throughputSeconds === undefined
        ? []
        : [{ kind: p.kind, s: p.recovery.throughputSeconds, during: p.recovery.backDuring }],
    );
    const never = timed.filter((t) => t.s === null);
    const slowest = timed.reduce<(typeof timed)[number] | undefined>(
      (m, t) => (t.s !== null && (m === undefined || t.s > m.s!) ? t : m),
      undefined,
    );
    const back = never.length
      ? `– after ${never.map((t) => t.kind).join(', ')}`
      : slowest
        ? `${slowest.s} (after ${slowest.kind}, back during ${slowest.during})`
        : 'n/a';
    const idle = s.phases.find((p) => p.kind === 'idle-in-tx');
    const growth = s.rssGrowth
      .map(
        (g) =>
          `${g.instance}: ${sign(g.floor.percent)}% (floor ${g.floor.fromMb} → ${g.floor.toMb} MB; ` +
          `median ${g.median.fromMb} → ${g.median.toMb}, ${sign(g.median.percent)}%; ` +
          `high ${g.highMb.join(' → ')}` +
          `${g.from === 'its own samples after its first minute' ? '; relaunched: from its own samples after its first minute' : ''})`,
      )
      .join('; ');
    lines.push(
      `| ${s.system} | ${back} | ${idle ? seconds(idle.recovery?.deadTuplesSeconds) : 'not run'} | ${growth || '–'} |`,
    );
  }
  return lines;
}

/** Lateness split by how tasks were due (runs that measured it). */
function byDue(systems: SystemRecord[]): string[] {
  const split = (l: LatenessSplit | null) => (l ? `${l.p50} / ${l.p99}` : '–');
  const rows = systems.flatMap((s) =>
    s.phases.flatMap((p) =>
      p.latenessByDue
        ? [
            `| ${s.system} | ${p.kind} | ${split(p.latenessByDue.now)} | ${split(p.latenessByDue.ahead)} |`,
          ]
        : [],
    ),
  );
  if (rows.length === 0) return [];
  return [
    '',
    "Lateness by how a task was due, p50 / p99 ms: due at once (scheduled, learnt of, claimed) and due a second or more after it was scheduled (fired from a wheel, or its peer's poll):",
    '',
    '| system | phase | due at once | due ≥ 1 s later |',
    '| --- | --- | --- | --- |',
    ...rows,
  ];
}

export function markdown(
  o: LongOptions,
  systems: SystemRecord[],
  startedAt: string,
  plots: PlotName[],
): string {
  const lines = [
    `# Long horizon, ${startedAt}`,
    '',
    `${o.rate}/s offered (high-load 1.5×), phases of ${o.phaseSeconds} s (idle-in-tx 1.5×), ${o.pending.toLocaleString('en-US')} pending, ` +
      `${Math.round(o.nowShare * 100)}% due now and the rest over the next ${o.aheadSeconds} s, ` +
      `${o.instances} instances × ${o.workers} workers, ~1 ms of work per task.`,
    '',
    ...plots.flatMap((p) => [`![${PLOT_TITLES[p]}](long-latest-${p}.svg)`, '']),
    '| system | phase | offered/s | effects/s | back to offered after s | lateness p50 / p99 / p99.99 / max ms | early | depth max / end | dead tuples max / end | tables + indexes MB | statements/s | CPU ms per effect | Postgres CPU ms per effect | RSS MB | events |',
    '| --- | --- | ---: | ---: | ---: | --- | ---: | --- | --- | ---: | ---: | ---: | ---: | --- | --- |',
  ];
  for (const s of systems)
    for (const [i, p] of s.phases.entries()) {
      // Back only during a later phase than the next: that phase's own harm is in the figure.
      const during = p.recovery?.backDuring;
      const late = during && during !== s.phases[i + 1]?.kind ? ` (during ${during})` : '';
      const l = p.lateness;
      const bytes = Object.values(p.bytes).reduce((a, b) => a + b, 0);
      lines.push(
        `| ${s.system} | ${p.kind}${p.completed ? '' : ' (incomplete)'} | ${p.offeredPerSecond} | ${p.effectsPerSecond} | ` +
          `${seconds(p.recovery?.throughputSeconds)}${late} | ` +
          `${l ? `${l.p50} / ${l.p99} / ${l.p9999} / ${l.max}` : '–'} | ${p.early} | ${p.depth.max} / ${p.depth.end} | ` +
          `${p.deadTuples.max} / ${p.deadTuples.end} | ${mb(bytes)} | ${p.statementsPerSecond ?? '–'} | ${p.cpuMsPerEffect} | ${p.postgresCpuMsPerEffect ?? '–'} | ` +
          `${p.processes.map((x) => x.rssMb).join(', ')} | ${p.events.join('; ')} |`,
      );
    }
  lines.push(...byDue(systems));
  lines.push(...summary(systems));
  lines.push(
    '',
    '| system | load s | offered | uncertain | missing | duplicates | early | pending fired | drain s | ledger |',
  );
  lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
  for (const s of systems) {
    const g = s.ledger;
    lines.push(
      `| ${s.system} | ${s.loadSeconds} | ${g.offered} | ${g.uncertain} | ${g.missing} | ${g.duplicates} | ${g.early} | ${g.pendingFired} | ${g.drainSeconds} | ${g.ok ? 'exactly once, none early' : 'FAILED'} |`,
    );
  }
  for (const s of systems) {
    if (s.topStatements.length === 0) continue;
    lines.push('', `Statements ${s.system} ran most (calls per offered task, whole run):`, '');
    lines.push('| per task | rows | ms | statement |', '| ---: | ---: | ---: | --- |');
    for (const t of s.topStatements)
      lines.push(`| ${t.perTask} | ${t.rows} | ${t.ms} | \`${t.query.replace(/\|/g, '\\|')}\` |`);
  }
  return lines.join('\n') + '\n';
}
