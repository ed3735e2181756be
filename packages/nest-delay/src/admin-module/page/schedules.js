import { clock, duration, el, number, relative } from './format.js';

const $ = (id) => document.getElementById(id);

const ruleOf = ({ rule }) =>
  rule.cron !== null
    ? `cron ${rule.cron}${rule.timeZone === 'UTC' ? '' : ` (${rule.timeZone})`}`
    : `every ${duration(rule.everyMs)}`;

function lastCell(last, nowMs) {
  if (!last) return el('td', { class: 'muted' }, 'none yet');
  return el(
    'td',
    { title: last.lastError ?? `${clock(last.at)} UTC` },
    el('a', { class: `pill state-${last.state}`, href: `#/tasks?state=${last.state}` }, last.state),
    el('span', { class: 'muted' }, ` ${relative(last.at, nowMs)}`),
  );
}

/**
 * The Schedules card: each schedule's rule, next and last occurrence, what
 * it missed, and a pause or resume button that calls `act(name, action)`.
 */
export function renderSchedules(list, nowMs, act) {
  const rows = list.map((s) =>
    el(
      'tr',
      { 'data-schedule': s.name, class: s.paused ? 'paused' : undefined },
      el(
        'td',
        { class: 'mono' },
        s.name,
        s.inCode ? null : el('span', { class: 'muted' }, ' (run time)'),
      ),
      el(
        'td',
        { class: 'mono', title: `catch-up ${s.rule.catchUp}, overlap ${s.rule.overlap}` },
        ruleOf(s),
      ),
      el(
        'td',
        { title: s.nextAt ? `${clock(s.nextAt)} UTC` : undefined },
        s.paused ? el('span', { class: 'pill' }, 'paused') : relative(s.nextAt, nowMs),
      ),
      lastCell(s.lastOccurrence, nowMs),
      el('td', { class: 'num' }, number(s.missed)),
      el(
        'td',
        {},
        el(
          'button',
          {
            type: 'button',
            class: s.paused ? undefined : 'ghost',
            'data-action': s.paused ? 'resume' : 'pause',
            onclick: () => void act(s.name, s.paused ? 'resume' : 'pause'),
          },
          s.paused ? 'Resume' : 'Pause',
        ),
      ),
    ),
  );
  $('schedules').tBodies[0].replaceChildren(
    ...(rows.length > 0
      ? rows
      : [el('tr', {}, el('td', { colspan: 6, class: 'muted' }, 'No schedule.'))]),
  );
  const paused = list.filter((s) => s.paused).length;
  $('schedules-note').textContent =
    `${list.length} schedule(s)${paused ? `, ${paused} paused` : ''}`;
}
