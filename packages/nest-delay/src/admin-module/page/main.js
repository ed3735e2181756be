import {
  api,
  ApiError,
  AuthError,
  needsToken,
  openStream,
  token,
  UnreachableError,
} from './api.js';
import { clock } from './format.js';
import { renderOverview } from './overview.js';
import { renderSchedules } from './schedules.js';
import { TasksView } from './tasks.js';
import { TimelineView } from './timeline.js';
import { renderTypes } from './types.js';

const $ = (id) => document.getElementById(id);

/** Regions the ring is cut into (at most its slots). */
const REGIONS = 60;
/** Between two tries while the server cannot be reached before the dashboard opened. */
const RETRY_MS = 3_000;

let stream = null;
let lastSnapshot = null;
let bannerTimer;

function banner(text, kind = '') {
  clearTimeout(bannerTimer);
  const node = $('banner');
  node.hidden = !text;
  node.textContent = text ?? '';
  node.className = `banner ${kind}`;
  node.dataset.kind = kind;
  // Good news fades; problems stay until they are over.
  if (text && kind === 'good') bannerTimer = setTimeout(() => (node.hidden = true), 6_000);
}

function live(state, text) {
  const node = $('live');
  node.dataset.state = state;
  node.textContent = text;
}

const tasks = new TasksView(banner);
const timeline = new TimelineView(banner);
const VIEWS = ['overview', 'tasks', 'timeline'];

function route() {
  if (!stream) return;
  const [path, query = ''] = location.hash.replace(/^#/, '').split('?');
  const params = new URLSearchParams(query);
  const view = VIEWS.find((name) => path.startsWith(`/${name}`)) ?? 'overview';
  for (const name of VIEWS) $(`view-${name}`).hidden = view !== name;
  const active = view === 'tasks' && params.get('state') === 'dead' ? 'dead' : view;
  for (const link of $('nav').querySelectorAll('a'))
    link.classList.toggle('active', link.dataset.view === active);
  if (view === 'tasks') tasks.show(params);
  if (view === 'timeline') timeline.show(params);
}

function showLogin(message) {
  stream?.close();
  stream = null;
  $('nav').hidden = true;
  $('logout').hidden = true;
  for (const name of VIEWS) $(`view-${name}`).hidden = true;
  $('login').hidden = false;
  live('off', 'signed out');
  const error = $('login-error');
  error.hidden = !message;
  error.textContent = message ?? '';
  // Without a token the app's guard alone decides: nothing to paste here.
  $('login-form').hidden = !needsToken;
  $('login-help').hidden = !needsToken;
  if (needsToken) $('token').focus();
}

/** Pauses or resumes a schedule, says how it went, and redraws the card at once. */
async function actOnSchedule(name, action) {
  try {
    await api(`/schedules/${encodeURIComponent(name)}/${action}`, { method: 'POST' });
    banner(`Schedule ${name} ${action === 'pause' ? 'paused' : 'resumed'}.`, 'good');
  } catch (error) {
    banner(error.message, 'bad');
  }
  try {
    const nowMs = lastSnapshot ? new Date(lastSnapshot.wheel.now).getTime() : Date.now();
    renderSchedules(await api('/schedules'), nowMs, actOnSchedule);
  } catch {
    // The next snapshot redraws it.
  }
}

/** Pauses or resumes a task type everywhere, says how it went, and redraws the card at once. */
async function actOnType(type, action) {
  try {
    const info = await api(`/types/${encodeURIComponent(type)}/${action}`, { method: 'POST' });
    banner(
      action === 'pause'
        ? `Task type ${type} paused on every instance: none of its tasks starts until resumed.`
        : `Task type ${type} resumed: ${info.waiting} due task(s) start in due order.`,
      'good',
    );
  } catch (error) {
    banner(error.message, 'bad');
  }
  try {
    const nowMs = lastSnapshot ? new Date(lastSnapshot.wheel.now).getTime() : Date.now();
    renderTypes(await api('/types'), lastSnapshot?.pulse.limitWait, nowMs, actOnType);
  } catch {
    // The next snapshot redraws it.
  }
}

function onSnapshot(snapshot) {
  lastSnapshot = snapshot;
  renderOverview(snapshot);
  const nowMs = new Date(snapshot.wheel.now).getTime();
  renderTypes(snapshot.types, snapshot.pulse.limitWait, nowMs, actOnType);
  renderSchedules(snapshot.schedules, nowMs, actOnSchedule);
  tasks.refresh(nowMs, !$('view-tasks').hidden);
  timeline.refresh(nowMs, !$('view-timeline').hidden);
  live('on', `live · ${clock(snapshot.wheel.now)} UTC`);
}

function startDashboard(slots) {
  $('login').hidden = true;
  $('nav').hidden = false;
  $('logout').hidden = !needsToken;
  banner(null);
  const regions = Math.min(REGIONS, slots);
  stream = openStream(`/stream?regions=${regions}`, {
    onEvent(type, data) {
      if (type === 'snapshot') onSnapshot(data);
      else if (type === 'error')
        banner(`The server could not take a snapshot: ${data.message}`, 'bad');
    },
    onStatus(status, waitMs) {
      if (status === 'on') {
        if ($('banner').dataset.kind === 'unreachable') banner(null);
      } else if (status === 'retrying') {
        live('retrying', 'reconnecting…');
        const since = lastSnapshot
          ? ` The figures below are from ${clock(lastSnapshot.wheel.now)} UTC.`
          : '';
        banner(
          `The server cannot be reached: trying again in ${Math.round(waitMs / 1000)} s.${since}`,
          'unreachable',
        );
      } else if (status === 'unauthorized') {
        token.clear();
        showLogin(
          needsToken
            ? 'The server no longer accepts this token (was it changed?). Paste the current one.'
            : 'The app no longer lets this browser in. Sign in to the app again, then reload.',
        );
      }
    },
  });
  route();
}

/** Checks the token with one cheap call (the wheel is in memory), then opens the dashboard. */
async function connect() {
  let wheel;
  try {
    wheel = await api('/wheel?regions=1');
  } catch (error) {
    if (error instanceof AuthError) {
      token.clear();
      showLogin(
        needsToken
          ? 'Wrong token: the server refused it. Check it against the token the server runs with.'
          : "The app's guard refused this browser: sign in to the app, then reload.",
      );
    } else if (error instanceof UnreachableError) {
      showLogin(`${error.message} Trying again in ${RETRY_MS / 1000} s…`);
      $('login').hidden = true;
      live('retrying', 'connecting…');
      banner(`${error.message} Trying again in ${RETRY_MS / 1000} s…`, 'bad unreachable');
      setTimeout(() => void connect(), RETRY_MS);
    } else {
      token.clear();
      showLogin(error instanceof ApiError ? error.message : String(error));
    }
    return;
  }
  startDashboard(wheel.slots);
}

$('login-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const value = $('token').value.trim();
  if (!value) return;
  token.set(value);
  $('token').value = '';
  $('login-error').hidden = true;
  void connect();
});

$('logout').addEventListener('click', () => {
  token.clear();
  showLogin(null);
});

window.addEventListener('hashchange', route);

if (!needsToken || token.get()) void connect();
else showLogin(null);
