/**
 * latest.svg: lateness distributions (spread, and the largest burst) and
 * effects per second per system, drawn by vega-lite, rendered to SVG by vega
 * without a browser.
 */
import type { DueRun } from './run-system.js';
import { toSvg } from './vega-svg.js';
import type { BurstSize } from '../workloads/burst.js';

function cdfPoints(runs: DueRun[]) {
  return runs.flatMap((r) =>
    r.outcome.quantiles.map((lateness, percentile) => ({ system: r.label, lateness, percentile })),
  );
}

function cdf(title: string, runs: DueRun[], unit: string) {
  return {
    title,
    width: 380,
    height: 240,
    data: { values: cdfPoints(runs) },
    mark: { type: 'line', interpolate: 'monotone' },
    encoding: {
      x: { field: 'lateness', type: 'quantitative', title: `lateness (${unit})` },
      y: { field: 'percentile', type: 'quantitative', title: 'percentile of tasks' },
      color: {
        field: 'system',
        type: 'nominal',
        legend: { orient: 'bottom', columns: 2, labelLimit: 260 },
      },
    },
  };
}

export async function renderChart(results: Record<string, any>): Promise<string | undefined> {
  const panels: object[] = [];
  const spread = results.spread?.runs as DueRun[] | undefined;
  const sizes = results.burst?.sizes as BurstSize[] | undefined;
  const row: object[] = [];
  if (spread)
    row.push(
      cdf(
        `Spread: ${spread[0]?.count.toLocaleString('en-US')} tasks due evenly over ${results.spread.spanMs / 1000} s`,
        spread,
        'ms',
      ),
    );
  const largest = sizes?.[sizes.length - 1];
  if (largest)
    row.push(
      cdf(`Burst: ${largest.count.toLocaleString('en-US')} tasks due at once`, largest.runs, 'ms'),
    );
  if (row.length) panels.push({ hconcat: row, resolve: { scale: { color: 'shared' } } });
  if (sizes) {
    const values = sizes.flatMap((s) => [
      ...s.runs.map((r) => ({
        system: r.label,
        tasks: s.count.toLocaleString('en-US'),
        effectsPerSecond: r.effectsPerSecond ?? 0,
      })),
      ...s.bare.map((b) => ({
        system: `limit: ${b.mode}`,
        tasks: s.count.toLocaleString('en-US'),
        effectsPerSecond: b.effectsPerSecond,
      })),
    ]);
    panels.push({
      title: 'Burst: effects per second',
      width: 780,
      height: { step: 12 },
      data: { values },
      mark: 'bar',
      encoding: {
        y: { field: 'system', type: 'nominal', title: null, sort: '-x' },
        yOffset: { field: 'tasks', type: 'nominal' },
        x: { field: 'effectsPerSecond', type: 'quantitative', title: 'effects per second' },
        color: {
          field: 'tasks',
          type: 'nominal',
          title: 'tasks due at once',
          scale: { scheme: 'tableau10' },
        },
      },
    });
  }
  if (panels.length === 0) return undefined;
  return toSvg({
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    config: { font: 'Helvetica, Arial, sans-serif', view: { stroke: null } },
    resolve: { scale: { color: 'independent' } },
    vconcat: panels,
  });
}
