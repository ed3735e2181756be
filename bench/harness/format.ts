import type { StatementTime } from '../systems/sut-main.js';

/** Markdown helpers shared by the workloads' report sections. */
export function table(
  header: string[],
  rows: Array<Array<string | number | null | undefined>>,
): string {
  const cell = (v: string | number | null | undefined) =>
    v === null || v === undefined ? '—' : typeof v === 'number' ? num(v) : v;
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`,
    ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`),
  ].join('\n');
}

export function num(v: number, digits?: number): string {
  if (!Number.isFinite(v)) return String(v);
  const d = digits ?? (Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2);
  return v.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: 0 });
}

export function ms(v: number | null | undefined): string {
  if (v === null || v === undefined) return '—';
  return Math.abs(v) >= 10_000 ? `${num(v / 1000, 1)} s` : `${num(v, 0)} ms`;
}

export function mib(bytes: number): string {
  return `${num(bytes / 2 ** 20, 1)} MiB`;
}

export function ratio(a: number, b: number): string {
  return b === 0 ? '—' : `${num(a / b, 2)}×`;
}

/** Where a system's connections spent their time: a heading line and a table, or nothing. */
export function statementTable(heading: string, times: StatementTime[] | undefined): string[] {
  if (!times?.length) return [];
  return [
    heading,
    table(
      ['statement', 'count', 'total', 'mean'],
      times.map((t) => [
        `\`${t.statement}…\``,
        t.count,
        ms(t.totalMs),
        `${num(t.totalMs / t.count, 2)} ms`,
      ]),
    ),
  ];
}
