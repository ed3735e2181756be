/**
 * The long run's charts (vega-lite, rendered to SVG without a browser): one
 * file each, both systems on one chart, time since each system's load
 * started on x, the phases as grey bands (the first system's: both run the
 * same phase lengths, a relaunch or a restart shifts the second by seconds).
 */
import { toSvg } from '../harness/vega-svg.js';
import type { SystemRecord } from './run-system.js';

export const PLOTS = ['throughput', 'lateness', 'dead-tuples', 'rss'] as const;
export type PlotName = (typeof PLOTS)[number];

const SYSTEM_COLOURS = {
  domain: ['nest-delay', 'pg-boss', 'floor'],
  range: ['#4c78a8', '#f58518', '#54a24b'],
};
const X_TITLE = 'seconds since the load started';
/** Lateness below this is drawn at it: a log scale has no 0. */
const LATENESS_FLOOR_MS = 1;

/** The first system's phases, and its warm-up and drain unshaded. */
function phaseBands(systems: SystemRecord[]) {
  const first = systems[0];
  const seconds = (ms: number) => (ms - first.startMs) / 1000;
  const band = (phase: string, from: number, to: number, shade: number) => ({
    phase,
    from,
    to,
    mid: (from + to) / 2,
    shade,
  });
  const phases = first.phases.map((p, i) =>
    band(p.kind, seconds(p.fromMs), seconds(p.toMs), i % 2 ? 0.05 : 0.12),
  );
  const end = first.series.at(-1)?.t;
  if (phases.length === 0 || end === undefined) return phases;
  return [
    band('warm-up', 0, phases[0].from, 0),
    ...phases,
    band('drain', phases[phases.length - 1].to, end, 0),
  ];
}

/** A time chart over the phase bands; `line` is the layer of the figures. */
function overPhases(systems: SystemRecord[], title: string, line: object): object {
  const bands = phaseBands(systems);
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    config: { font: 'Helvetica, Arial, sans-serif', view: { stroke: null } },
    // Room above the chart for the phase names.
    title: { text: title, offset: 95 },
    width: 860,
    height: 280,
    layer: [
      {
        data: { values: bands },
        mark: { type: 'rect', color: '#888' },
        encoding: {
          x: { field: 'from', type: 'quantitative', title: X_TITLE },
          x2: { field: 'to' },
          opacity: { field: 'shade', type: 'quantitative', scale: null, legend: null },
        },
      },
      {
        data: { values: bands },
        mark: {
          type: 'text',
          angle: 270,
          align: 'left',
          baseline: 'middle',
          fontSize: 10,
          color: '#444',
        },
        encoding: {
          x: { field: 'mid', type: 'quantitative' },
          y: { value: -4 },
          text: { field: 'phase' },
        },
      },
      line,
    ],
  };
}

const systemColour = {
  field: 'system',
  type: 'nominal',
  title: null,
  scale: SYSTEM_COLOURS,
  legend: { orient: 'bottom' },
};

function throughput(systems: SystemRecord[]): object {
  const values = systems.flatMap((s) =>
    s.series.flatMap((x) => [
      { system: s.system, t: x.t, measure: 'effects/s', value: x.effectsPerSecond },
      { system: s.system, t: x.t, measure: 'offered/s', value: x.offeredPerSecond },
    ]),
  );
  return overPhases(systems, 'Effects per second against offered', {
    data: { values },
    mark: { type: 'line', strokeWidth: 1.5 },
    encoding: {
      x: { field: 't', type: 'quantitative' },
      y: { field: 'value', type: 'quantitative', title: 'tasks per second' },
      color: systemColour,
      strokeDash: {
        field: 'measure',
        type: 'nominal',
        title: null,
        scale: {
          domain: ['effects/s', 'offered/s'],
          range: [
            [1, 0],
            [4, 3],
          ],
        },
        legend: { orient: 'bottom' },
      },
    },
  });
}

function lateness(systems: SystemRecord[]): object {
  const values = systems.flatMap((s) =>
    s.lateness.flatMap((w) => [
      { system: s.system, t: w.t + 5, quantile: 'p99', ms: Math.max(LATENESS_FLOOR_MS, w.p99) },
      { system: s.system, t: w.t + 5, quantile: 'p50', ms: Math.max(LATENESS_FLOOR_MS, w.p50) },
    ]),
  );
  return overPhases(systems, 'Lateness per 10 s of effect starts (effect start − due time)', {
    data: { values },
    mark: { type: 'line', strokeWidth: 1.5, point: { size: 12 } },
    encoding: {
      x: { field: 't', type: 'quantitative' },
      y: {
        field: 'ms',
        type: 'quantitative',
        title: `ms (log; below ${LATENESS_FLOOR_MS} ms drawn at ${LATENESS_FLOOR_MS})`,
        scale: { type: 'log' },
      },
      color: systemColour,
      strokeDash: {
        field: 'quantile',
        type: 'nominal',
        title: null,
        scale: {
          domain: ['p99', 'p50'],
          range: [
            [1, 0],
            [4, 3],
          ],
        },
        legend: { orient: 'bottom' },
      },
    },
  });
}

function deadTuples(systems: SystemRecord[]): object {
  const values = systems.flatMap((s) =>
    s.series
      .filter((x) => x.deadTuples !== null)
      .map((x) => ({
        system: s.system,
        t: x.t,
        dead: Object.values(x.deadTuples!).reduce((a, n) => a + n, 0),
      })),
  );
  return overPhases(systems, "Dead tuples, summed over the system's tables", {
    data: { values },
    mark: { type: 'line', strokeWidth: 1.5 },
    encoding: {
      x: { field: 't', type: 'quantitative' },
      y: { field: 'dead', type: 'quantitative', title: 'dead tuples (n_dead_tup)' },
      color: systemColour,
    },
  });
}

function rss(systems: SystemRecord[]): object {
  const values = systems.flatMap((s) =>
    s.series.flatMap((x) =>
      x.processes.map((p) => ({
        system: s.system,
        t: x.t,
        instance: `instance ${p.instance}`,
        pid: p.pid,
        rssMb: p.rssMb,
      })),
    ),
  );
  return overPhases(systems, 'RSS per instance (a relaunched instance starts a new line)', {
    data: { values },
    mark: { type: 'line', strokeWidth: 1.5 },
    encoding: {
      x: { field: 't', type: 'quantitative' },
      y: { field: 'rssMb', type: 'quantitative', title: 'RSS MB', scale: { zero: false } },
      color: systemColour,
      strokeDash: {
        field: 'instance',
        type: 'nominal',
        title: null,
        scale: {
          range: [
            [1, 0],
            [4, 3],
            [1, 2],
          ],
        },
        legend: { orient: 'bottom' },
      },
      detail: { field: 'pid', type: 'nominal' },
    },
  });
}

const SPECS: Record<PlotName, (systems: SystemRecord[]) => object> = {
  throughput,
  lateness,
  'dead-tuples': deadTuples,
  rss,
};

/** Every chart as SVG text, by name; none when no system ran. */
export async function renderPlots(systems: SystemRecord[]): Promise<Map<PlotName, string>> {
  const plots = new Map<PlotName, string>();
  if (systems.length === 0) return plots;
  for (const name of PLOTS) plots.set(name, await toSvg(SPECS[name](systems)));
  return plots;
}
