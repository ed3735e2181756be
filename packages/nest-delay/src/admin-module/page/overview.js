import { latenessChart, rateChart } from './charts.js';
import { clock, duration, el, number, relative, STATES } from './format.js';
import { drawWheel } from './wheel.js';

const $ = (id) => document.getElementById(id);

const STATE_HINTS = {
  pending: 'waiting for their time',
  executed: 'ran to completion',
  cancelled: 'cancelled before running',
  dead: 'out of attempts · open dead letters →',
};

function stateCards(counts, wheel) {
  const cards = STATES.map((state) => {
    const entry = counts.states[state] ?? { label: '0', count: 0 };
    const dead = state === 'dead';
    return el(
      dead ? 'a' : 'div',
      {
        class: `card state-card state-${state}${dead ? ' link' : ''}`,
        href: dead ? '#/tasks?state=dead' : undefined,
        'data-state': state,
      },
      el('div', { class: 'label' }, state),
      el('div', { class: 'value', 'data-count': entry.count }, entry.label),
      el('div', { class: 'hint' }, STATE_HINTS[state]),
    );
  });
  cards.push(
    el(
      'div',
      { class: 'card state-card wheel-card' },
      el('div', { class: 'label' }, 'in this wheel'),
      el('div', { class: 'value' }, number(wheel.size)),
      el(
        'div',
        { class: 'hint' },
        `${number(wheel.overdue)} overdue · window ${duration(wheel.windowMs)}`,
      ),
    ),
  );
  $('state-cards').replaceChildren(...cards);
  const dead = counts.states.dead;
  $('nav-dead-count').textContent = dead ? dead.label : '0';
}

function pulse(p) {
  rateChart($('rate-chart'), p);
  const last = p.executed.at(-2) ?? 0; // the current second is still filling
  const minute = p.executed.slice(-61, -1).reduce((a, b) => a + b, 0);
  const total = (series) => series.reduce((a, b) => a + b, 0);
  $('rate-note').textContent = `this instance · last ${Math.round(p.seconds / 60)} min`;
  $('rate-legend').replaceChildren(
    el('span', {}, 'last second ', el('b', {}, number(last)), '/s'),
    el('span', {}, 'last minute ', el('b', {}, (minute / 60).toFixed(1)), '/s avg'),
    el(
      'span',
      {},
      el('i', { class: 'swatch state-dead' }),
      'dead ',
      el('b', {}, number(total(p.dead))),
    ),
    el(
      'span',
      {},
      el('i', { class: 'swatch', 'data-kind': 'failed' }),
      'failed ',
      el('b', {}, number(total(p.failed))),
    ),
  );
  const l = p.lateness;
  $('lateness-note').textContent =
    `${number(l.count)} executed · claim time − due time, less waits behind limits`;
  const figure = (k, v, id) =>
    el('div', { class: 'figure', id }, el('div', { class: 'k' }, k), el('div', { class: 'v' }, v));
  const ms = (v) => (v === null ? '–' : `≤ ${duration(v)}`);
  $('lateness-figures').replaceChildren(
    figure('p50', ms(l.p50), 'lateness-p50'),
    figure('p90', ms(l.p90), 'lateness-p90'),
    figure('p99', ms(l.p99), 'lateness-p99'),
  );
  latenessChart($('lateness-chart'), l.buckets);
}

function wheelPanel(wheel) {
  const nowMs = new Date(wheel.now).getTime();
  drawWheel($('wheel-ring'), wheel, nowMs);
  const revolution = wheel.slots * wheel.tickMs;
  $('wheel-note').textContent =
    `${wheel.instanceId} · ${number(wheel.slots)} slots × ${duration(wheel.tickMs)} = ${duration(revolution)} a turn`;
  const figure = (k, v) =>
    el('div', { class: 'figure' }, el('div', { class: 'k' }, k), el('div', { class: 'v' }, v));
  $('wheel-figures').replaceChildren(
    figure('pointer', `slot ${number(wheel.pointerSlot)}`),
    figure('tick', number(wheel.currentTick)),
    figure('held', number(wheel.size)),
    figure('overdue', number(wheel.overdue)),
  );
  const busy = wheel.regions
    .filter((r) => r.entries > 0)
    .sort((a, b) => new Date(a.passFrom) - new Date(b.passFrom));
  const rows = busy.map((r) =>
    el(
      'tr',
      { class: r.thisRevolution > 0 ? 'hot' : undefined },
      el('td', { class: 'mono' }, `${r.fromSlot}–${r.toSlot}`),
      el('td', { class: 'num' }, number(r.entries)),
      el('td', { class: 'num' }, number(r.thisRevolution)),
      el(
        'td',
        { title: `${clock(r.passFrom)}–${clock(r.passTo)} UTC` },
        relative(r.passFrom, nowMs),
      ),
      el(
        'td',
        { class: 'muted' },
        r.earliestDueAt
          ? `${clock(r.earliestDueAt)}${r.latestDueAt !== r.earliestDueAt ? ` – ${clock(r.latestDueAt)}` : ''}`
          : '–',
      ),
    ),
  );
  const body = $('wheel-regions').tBodies[0];
  body.replaceChildren(
    ...(rows.length > 0
      ? rows
      : [
          el(
            'tr',
            {},
            el(
              'td',
              { colspan: 5, class: 'muted' },
              'Nothing held: no task falls due within the window.',
            ),
          ),
        ]),
  );
}

function instances(list, nowMs) {
  const rows = list.map((i) =>
    el(
      'tr',
      {},
      el(
        'td',
        { class: 'mono' },
        i.id,
        i.self ? el('span', { class: 'muted' }, ' (this one)') : null,
      ),
      el(
        'td',
        {},
        el(
          'span',
          { class: `pill ${i.live ? 'state-executed' : 'state-dead'}` },
          i.live ? 'live' : 'expired',
        ),
        el('span', { class: 'muted' }, ` until ${clock(i.leaseUntil)}`),
      ),
      el('td', { class: 'num' }, `${number(i.held)}${i.heldCapped ? '+' : ''}`),
      clockCell(i),
      el('td', { class: 'muted' }, relative(i.heartbeatAt, nowMs)),
    ),
  );
  $('instances').tBodies[0].replaceChildren(...rows);
  $('instances-note').textContent = `${list.filter((i) => i.live).length} live of ${list.length}`;
}

/**
 * Its host's clock against the database's: what the engine corrects, and
 * what remains of it in the clock the engine runs on (a clock of its own in
 * tests is shown as it is, uncorrected).
 */
function clockCell(i) {
  const signed = (ms) => `${ms > 0 ? '+' : ''}${duration(ms)}`;
  if (i.systemClockOffsetMs !== null && i.systemClockOffsetMs !== undefined)
    return el(
      'td',
      {
        class: 'num',
        title: `the engine runs ${i.clockOffsetMs === null ? '?' : signed(i.clockOffsetMs)} off the database's clock`,
      },
      signed(i.systemClockOffsetMs),
      el('span', { class: 'muted' }, ' corrected'),
    );
  return el('td', { class: 'num' }, i.clockOffsetMs === null ? '–' : signed(i.clockOffsetMs));
}

function types(counts) {
  const rows = counts.types.map((t) =>
    el(
      'tr',
      {},
      el('td', { class: 'mono type' }, t.type),
      // Each count opens those tasks: that type in that state.
      ...STATES.map((s) =>
        el(
          'td',
          { class: 'num' },
          t[s] > 0
            ? el(
                'a',
                {
                  class: 'count-link',
                  href: `#/tasks?state=${s}&type=${encodeURIComponent(t.type)}`,
                },
                number(t[s]),
              )
            : number(t[s] ?? 0),
        ),
      ),
    ),
  );
  $('types').tBodies[0].replaceChildren(
    ...(rows.length > 0
      ? rows
      : [el('tr', {}, el('td', { colspan: 5, class: 'muted' }, 'No task yet.'))]),
  );
  $('types-note').textContent = `counted ${clock(counts.computedAt)} UTC`;
}

/** Draws one snapshot of the stream: { counts, instances, wheel, pulse }. */
export function renderOverview(snapshot) {
  const nowMs = new Date(snapshot.wheel.now).getTime();
  stateCards(snapshot.counts, snapshot.wheel);
  pulse(snapshot.pulse);
  wheelPanel(snapshot.wheel);
  instances(snapshot.instances, nowMs);
  types(snapshot.counts);
}
