/** The Markdown table of a long run: one row per system and phase, then the ledger. */
import type { LongOptions } from './options.js';
import type { SystemRecord } from './run-system.js';

const mb = (bytes: number) => (bytes / 1048576).toFixed(1);

export function markdown(o: LongOptions, systems: SystemRecord[], startedAt: string): string {
  const lines = [
    `# Long horizon, ${startedAt}`,
    '',
    `${o.rate}/s offered (high-load 1.5×), phases of ${o.phaseSeconds} s, ${o.pending.toLocaleString('en-US')} pending, ` +
      `${Math.round(o.nowShare * 100)}% due now and the rest over the next ${o.aheadSeconds} s, ` +
      `${o.instances} instances × ${o.workers} workers, ~1 ms of work per task.`,
    '',
    '| system | phase | offered/s | effects/s | lateness p50 / p99 / p99.99 / max ms | early | depth max / end | dead tuples max / end | tables + indexes MB | statements/s | CPU ms per effect | RSS MB | events |',
    '| --- | --- | ---: | ---: | --- | ---: | --- | --- | ---: | ---: | ---: | --- | --- |',
  ];
  for (const s of systems)
    for (const p of s.phases) {
      const l = p.lateness;
      const bytes = Object.values(p.bytes).reduce((a, b) => a + b, 0);
      lines.push(
        `| ${s.system} | ${p.kind}${p.completed ? '' : ' (incomplete)'} | ${p.offeredPerSecond} | ${p.effectsPerSecond} | ` +
          `${l ? `${l.p50} / ${l.p99} / ${l.p9999} / ${l.max}` : '–'} | ${p.early} | ${p.depth.max} / ${p.depth.end} | ` +
          `${p.deadTuples.max} / ${p.deadTuples.end} | ${mb(bytes)} | ${p.statementsPerSecond ?? '–'} | ${p.cpuMsPerEffect} | ` +
          `${p.processes.map((x) => x.rssMb).join(', ')} | ${p.events.join('; ')} |`,
      );
    }
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
