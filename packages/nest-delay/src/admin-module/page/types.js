import { clock, duration, el, number } from './format.js';

const $ = (id) => document.getElementById(id);

/** "4 at once · 50 per 1.0 s", or "unlimited". */
function limitText(limit) {
  if (!limit) return 'unlimited';
  const parts = [];
  if (limit.concurrency !== null) parts.push(`${number(limit.concurrency)} at once`);
  if (limit.rate !== null)
    parts.push(`${number(limit.rate.starts)} per ${duration(limit.rate.perMs)}`);
  return parts.length > 0 ? parts.join(' · ') : 'unlimited';
}

function limitsCell(t) {
  const title = [
    `declared: ${limitText(t.declared)}`,
    t.override ? `set at run time: ${limitText(t.override)}` : null,
    t.perKey ? 'each key of the payload has these limits of its own' : null,
  ]
    .filter(Boolean)
    .join('\n');
  return el(
    'td',
    { class: 'mono', title },
    limitText(t.effective),
    t.perKey ? el('span', { class: 'pill per-key' }, 'per key') : null,
    t.override ? el('span', { class: 'muted' }, ' (set at run time)') : null,
  );
}

function stateCell(t, nowMs) {
  if (!t.paused) return el('td', { class: 'muted' }, 'running');
  const since = t.pausedAt ? Math.max(0, nowMs - new Date(t.pausedAt).getTime()) : null;
  return el(
    'td',
    { title: t.pausedAt ? `paused at ${clock(t.pausedAt)} UTC` : undefined },
    el('span', { class: 'pill paused' }, 'paused'),
    since === null ? null : el('span', { class: 'muted' }, ` ${duration(since)}`),
  );
}

/** Executed tasks' waits behind the limit over the pulse's window, from this instance. */
function waitCell(wait) {
  if (!wait || wait.count === 0) return el('td', { class: 'num muted' }, '–');
  const le = (ms) => (ms === null ? '–' : `≤ ${duration(ms)}`);
  return el(
    'td',
    {
      class: 'num',
      title: `${number(wait.count)} executed here in the last minutes · p50 ${le(wait.p50)} · p90 ${le(wait.p90)} · p99 ${le(wait.p99)} · longest ${duration(wait.maxMs)}`,
    },
    `p90 ${le(wait.p90)}`,
    el('span', { class: 'muted' }, ` · max ${duration(wait.maxMs)}`),
  );
}

/**
 * The Task types card: each type's limits in force (concurrency, rate, per
 * key), paused or not, its tasks waiting (due, cluster-wide, and of those
 * held here), how long executed ones waited behind the limit, and a pause or
 * resume button that calls `act(type, action)`. `limitWait` is the pulse's
 * per-type list.
 */
export function renderTypes(list, limitWait, nowMs, act) {
  const waits = new Map((limitWait ?? []).map((w) => [w.type, w]));
  const rows = list.map((t) =>
    el(
      'tr',
      { 'data-type': t.type, class: t.paused ? 'paused' : undefined },
      el('td', { class: 'mono type' }, t.type),
      limitsCell(t),
      stateCell(t, nowMs),
      el(
        'td',
        { class: 'num', title: 'due and not yet run, on every instance' },
        t.waiting > 0
          ? el(
              'a',
              {
                class: 'count-link',
                href: `#/tasks?state=pending&type=${encodeURIComponent(t.type)}`,
              },
              number(t.waiting),
            )
          : '0',
      ),
      el('td', { class: 'num' }, number(t.waitingHere)),
      waitCell(waits.get(t.type)),
      el(
        'td',
        {},
        el(
          'button',
          {
            type: 'button',
            class: t.paused ? undefined : 'ghost',
            'data-action': t.paused ? 'resume' : 'pause',
            title: t.paused
              ? 'Its tasks start again, in due order'
              : 'No task of this type starts, on any instance, until resumed',
            onclick: () => void act(t.type, t.paused ? 'resume' : 'pause'),
          },
          t.paused ? 'Resume' : 'Pause',
        ),
      ),
    ),
  );
  $('task-types').tBodies[0].replaceChildren(
    ...(rows.length > 0
      ? rows
      : [el('tr', {}, el('td', { colspan: 7, class: 'muted' }, 'No task type.'))]),
  );
  const paused = list.filter((t) => t.paused).length;
  const limited = list.filter((t) => t.effective).length;
  const waiting = list.reduce((sum, t) => sum + t.waiting, 0);
  $('task-types-note').textContent = [
    `${list.length} type(s)`,
    limited ? `${limited} limited` : null,
    paused ? `${paused} paused` : null,
    waiting ? `${number(waiting)} due and waiting` : null,
  ]
    .filter(Boolean)
    .join(', ');
}
