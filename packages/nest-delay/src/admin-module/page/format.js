// Numbers, durations and times the way an operator reads them.

const grouped = new Intl.NumberFormat('en-US');

export const number = (n) => (n === null || n === undefined ? '–' : grouped.format(n));

/** 12 ms, 3.4 s, 5m 20s, 2h 05m, 3d 4h. */
export function duration(ms) {
  if (ms === null || ms === undefined) return '–';
  const abs = Math.abs(ms);
  if (abs < 1_000) return `${Math.round(ms)} ms`;
  if (abs < 60_000) return `${(ms / 1_000).toFixed(abs < 10_000 ? 1 : 0)} s`;
  const s = Math.round(abs / 1_000);
  const sign = ms < 0 ? '−' : '';
  if (s < 3_600) return `${sign}${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  if (s < 86_400)
    return `${sign}${Math.floor(s / 3_600)}h ${String(Math.floor(s / 60) % 60).padStart(2, '0')}m`;
  return `${sign}${Math.floor(s / 86_400)}d ${Math.floor(s / 3_600) % 24}h`;
}

/** "in 5m 20s" or "12 s ago", against the server's now. */
export function relative(iso, nowMs) {
  if (!iso) return '–';
  const delta = new Date(iso).getTime() - nowMs;
  if (Math.abs(delta) < 500) return 'now';
  return delta > 0 ? `in ${duration(delta)}` : `${duration(-delta)} ago`;
}

const pad = (n, width = 2) => String(n).padStart(width, '0');

/** 2026-01-01 09:30:05 in UTC: one zone for every operator and every log line. */
export function instant(iso) {
  if (!iso) return '–';
  const d = new Date(iso);
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
}

/** 09:30:05 (UTC). */
export const clock = (iso) => (iso ? instant(iso).slice(11) : '–');

/** Builds an element: el('td', { class: 'num' }, '42'). */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof window.Node ? child : String(child));
  }
  return node;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** Builds an SVG element; a `title` attribute becomes a <title> child (the hover text). */
export function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null) continue;
    if (name === 'title') {
      const title = document.createElementNS(SVG_NS, 'title');
      title.textContent = value;
      node.append(title);
    } else node.setAttribute(name, String(value));
  }
  for (const child of children.flat()) if (child) node.append(child);
  return node;
}

export const STATES = ['pending', 'executed', 'cancelled', 'dead'];

export const statePill = (state) => el('span', { class: `pill state-${state}` }, state);
