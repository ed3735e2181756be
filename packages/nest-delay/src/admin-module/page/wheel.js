import { clock, duration, number, svg } from './format.js';

const SIZE = 360;
const C = SIZE / 2;
/** Room beside the ring for the labels at 3 and 9 o'clock. */
const MARGIN = 28;
const OUTER = 138;
const INNER = 102;
const PASS = 94; // the inner band: entries due on the pointer's next pass

const angleOf = (slot, slots) => (slot / slots) * 2 * Math.PI - Math.PI / 2;
const at = (r, a) => [C + r * Math.cos(a), C + r * Math.sin(a)];

function arc(r1, r2, a1, a2) {
  const large = a2 - a1 > Math.PI ? 1 : 0;
  const [x1, y1] = at(r2, a1);
  const [x2, y2] = at(r2, a2);
  const [x3, y3] = at(r1, a2);
  const [x4, y4] = at(r1, a1);
  return `M${x1},${y1} A${r2},${r2} 0 ${large} 1 ${x2},${y2} L${x3},${y3} A${r1},${r1} 0 ${large} 0 ${x4},${y4} Z`;
}

/**
 * The ring as it is: slot 0 at the top, clockwise; each region an arc whose
 * depth of colour says how many entries it holds (any revolution), an inner
 * band for those due on the pointer's next pass, the pointer on the last
 * tick processed, and around it how far ahead each quarter of the ring is.
 */
export function drawWheel(container, wheel, nowMs) {
  const { slots, tickMs, pointerSlot, regions } = wheel;
  const most = Math.max(...regions.map((r) => r.entries), 1);
  const ring = svg('svg', {
    viewBox: `${-MARGIN} 0 ${SIZE + 2 * MARGIN} ${SIZE}`,
    role: 'img',
    'aria-label': 'The timing wheel',
  });
  ring.append(
    svg('circle', {
      class: 'track',
      cx: C,
      cy: C,
      r: (OUTER + INNER) / 2,
      'stroke-width': OUTER - INNER,
    }),
  );
  for (const region of regions) {
    const a1 = angleOf(region.fromSlot, slots);
    const a2 = angleOf(region.toSlot + 1, slots);
    const title =
      `slots ${region.fromSlot}–${region.toSlot}: ${number(region.entries)} entries, ` +
      `${number(region.thisRevolution)} on the next pass (${clock(region.passFrom)}–${clock(region.passTo)} UTC, ` +
      `in ${duration(new Date(region.passFrom).getTime() - nowMs)})`;
    if (region.entries === 0) {
      ring.append(svg('path', { class: 'region empty', d: arc(INNER, OUTER, a1, a2), title }));
      continue;
    }
    // Log scale: one busy region must not wash all the others out.
    const depth = 0.25 + 0.75 * (Math.log1p(region.entries) / Math.log1p(most));
    ring.append(
      svg('path', {
        class: 'region full',
        d: arc(INNER, OUTER, a1, a2),
        'fill-opacity': depth.toFixed(2),
        title,
        'data-entries': region.entries,
      }),
    );
    if (region.thisRevolution > 0) {
      ring.append(svg('path', { class: 'region pass', d: arc(PASS, INNER - 2, a1, a2), title }));
    }
  }
  // Quarter marks: how long until the pointer gets there.
  for (let q = 1; q <= 3; q++) {
    const slot = (pointerSlot + (q * slots) / 4) % slots;
    const [x, y] = at(OUTER + 22, angleOf(slot, slots));
    const label = svg('text', { class: 'centre-small', x, y: y + 4, 'text-anchor': 'middle' });
    label.textContent = `+${duration((q * slots * tickMs) / 4)}`;
    ring.append(label);
  }
  const a = angleOf(pointerSlot + 0.5, slots);
  const [px, py] = at(OUTER + 4, a);
  const [qx, qy] = at(PASS - 18, a);
  ring.append(svg('line', { class: 'pointer', x1: qx, y1: qy, x2: px, y2: py }));
  ring.append(
    svg('circle', {
      class: 'pointer-dot',
      cx: px,
      cy: py,
      r: 4,
      title: `pointer: slot ${pointerSlot}, tick ${wheel.currentTick}`,
    }),
  );
  const big = svg('text', { class: 'centre-big', x: C, y: C + 4, 'text-anchor': 'middle' });
  big.textContent = number(wheel.size);
  const small = svg('text', { class: 'centre-small', x: C, y: C + 24, 'text-anchor': 'middle' });
  small.textContent =
    wheel.overdue > 0 ? `held · ${number(wheel.overdue)} overdue` : 'held in memory';
  ring.append(big, small);
  container.replaceChildren(ring);
}
