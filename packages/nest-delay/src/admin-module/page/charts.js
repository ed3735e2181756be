import { duration, number, svg } from './format.js';

const W = 640;
const H = 150;
const PAD = { left: 34, right: 8, top: 10, bottom: 20 };

/** A "nice" top for the y axis: 1, 2, 5 × 10^n at or above `max`. */
function niceTop(max) {
  if (max <= 1) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  return [1, 2, 5, 10].map((m) => m * power).find((top) => top >= max);
}

/** An empty chart with its horizontal grid at 0, half and `top`, labelled. */
function frame(label, top, y) {
  const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': label });
  for (const v of [0, top / 2, top]) {
    chart.append(
      svg('line', { class: 'axis', x1: PAD.left, x2: W - PAD.right, y1: y(v), y2: y(v) }),
    );
    const text = svg('text', { x: PAD.left - 6, y: y(v) + 3, 'text-anchor': 'end' });
    text.textContent = number(v);
    chart.append(text);
  }
  return chart;
}

/**
 * Executed per second as an area, failures and dead letters as ticks under
 * it, over the series' seconds (oldest first, the last is the current second).
 */
export function rateChart(container, { executed, failed, dead, seconds }) {
  const top = niceTop(Math.max(...executed, ...failed, ...dead, 1));
  const x = (i) => PAD.left + (i / Math.max(seconds - 1, 1)) * (W - PAD.left - PAD.right);
  const y = (v) => H - PAD.bottom - (v / top) * (H - PAD.top - PAD.bottom);
  const points = executed.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`);
  const base = H - PAD.bottom;
  const chart = frame('Executed per second', top, y);
  chart.append(
    svg('polygon', {
      class: 'spark-area',
      points: `${x(0)},${base} ${points.join(' ')} ${x(seconds - 1)},${base}`,
    }),
    svg('polyline', { class: 'spark-line', points: points.join(' ') }),
  );
  const tickW = Math.max((W - PAD.left - PAD.right) / seconds, 1.5);
  for (const [series, kind, what] of [
    [failed, 'spark-failed', 'failed'],
    [dead, 'spark-dead', 'dead-lettered'],
  ]) {
    series.forEach((v, i) => {
      if (v > 0)
        chart.append(
          svg('rect', {
            class: kind,
            x: x(i) - tickW / 2,
            y: y(v),
            width: tickW,
            height: base - y(v),
            title: `${v} ${what}`,
          }),
        );
    });
  }
  const minutes = Math.round(seconds / 60);
  for (let m = minutes; m >= 0; m--) {
    const i = seconds - 1 - m * 60;
    if (i < 0) continue;
    const label = svg('text', { x: x(i), y: H - 5, 'text-anchor': m === 0 ? 'end' : 'middle' });
    label.textContent = m === 0 ? 'now' : `−${m} min`;
    chart.append(label);
  }
  container.replaceChildren(chart);
}

const bucketLabel = (leMs, previous) =>
  leMs === null ? `> ${duration(previous)}` : `≤ ${duration(leMs).replace(' ', '')}`;

/** Lateness buckets as bars; the late ones warm, the very late ones red. */
export function latenessChart(container, buckets) {
  const top = niceTop(Math.max(...buckets.map((b) => b.count), 1));
  const n = buckets.length;
  const slot = (W - PAD.left - PAD.right) / n;
  const y = (v) => H - PAD.bottom - (v / top) * (H - PAD.top - PAD.bottom);
  const chart = frame('Lateness histogram', top, y);
  buckets.forEach((bucket, i) => {
    const previous = i > 0 ? buckets[i - 1].leMs : 0;
    const label = bucketLabel(bucket.leMs, previous);
    const bound = bucket.leMs ?? Infinity;
    const kind = bound > 5_000 ? 'very-late' : bound > 1_000 ? 'late' : '';
    const x = PAD.left + i * slot + slot * 0.15;
    chart.append(
      svg('rect', {
        class: `bar-rect ${kind}`,
        x,
        y: y(bucket.count),
        width: slot * 0.7,
        height: Math.max(H - PAD.bottom - y(bucket.count), bucket.count > 0 ? 1.5 : 0),
        title: `${label}: ${number(bucket.count)} task(s)`,
      }),
    );
    if (i % 2 === 0 || n <= 8) {
      const text = svg('text', { x: x + slot * 0.35, y: H - 5, 'text-anchor': 'middle' });
      text.textContent = label.replace('≤ ', '');
      chart.append(text);
    }
  });
  container.replaceChildren(chart);
}
