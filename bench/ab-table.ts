/**
 * bench:ab's table: each figure's median per build over the rounds, and the
 * ratio after/before as the median of the rounds' own ratios (on a shared
 * machine only a round's two builds ran beside the same load). A figure is
 * flagged when the after build is worse than LIMIT times the before build,
 * whichever way worse points for it.
 */

/** Issue 41: no figure worse than 1.15× the old build's in the same run. */
export const LIMIT = 1.15;

export interface FigureDef {
  key: string;
  label: string;
  /** Which way is better: lateness and CPU lower, effects/s higher. */
  better: 'lower' | 'higher';
}

/** One round's figures of each build, by FigureDef.key (null: not measured). */
export interface RoundFigures {
  before: Record<string, number | null>;
  after: Record<string, number | null>;
}

export interface Row extends FigureDef {
  before: number | null;
  after: number | null;
  /** Median over the rounds of after/before. */
  ratio: number | null;
  roundRatios: (number | null)[];
  /** How many times worse the after build is (ratio, or 1/ratio where higher is better). */
  worseBy: number | null;
  flagged: boolean;
}

export function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

const present = (values: (number | null | undefined)[]) =>
  values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));

export function compare(defs: FigureDef[], rounds: RoundFigures[]): Row[] {
  return defs.map((def) => {
    const roundRatios = rounds.map(({ before, after }) => {
      const b = before[def.key];
      const a = after[def.key];
      return typeof a === 'number' && typeof b === 'number' && b > 0 ? a / b : null;
    });
    const ratio = median(present(roundRatios));
    const worseBy =
      ratio === null ? null : def.better === 'lower' ? ratio : ratio > 0 ? 1 / ratio : Infinity;
    return {
      ...def,
      before: median(present(rounds.map((r) => r.before[def.key]))),
      after: median(present(rounds.map((r) => r.after[def.key]))),
      ratio,
      roundRatios,
      worseBy,
      flagged: worseBy !== null && worseBy > LIMIT,
    };
  });
}

const num = (v: number | null, digits = 0) =>
  v === null ? '—' : v.toLocaleString('en-US', { maximumFractionDigits: digits });

export function markdown(rows: Row[]): string {
  const lines = [
    '| figure | better | before (median) | after (median) | after/before | each round | |',
    '|---|---|---:|---:|---:|---|---|',
  ];
  for (const r of rows)
    lines.push(
      `| ${r.label} | ${r.better} | ${num(r.before, 1)} | ${num(r.after, 1)} | ${num(r.ratio, 2)} | ${r.roundRatios
        .map((v) => num(v, 2))
        .join(', ')} | ${r.flagged ? `**worse ${num(r.worseBy, 2)}× > ${LIMIT}×**` : ''} |`,
    );
  return lines.join('\n');
}
