import { api } from './api.js';
import { clock, duration, el, instant, number, relative, statePill } from './format.js';

const $ = (id) => document.getElementById(id);
const PAGE = 25;
/** At most this many dead letters per click of the bulk retry. */
const BULK_LIMIT = 100;
const FILTERS = ['state', 'type', 'keyPrefix', 'dueFrom', 'dueBefore'];

/**
 * The task list (filters from the URL's query, keyset pages), one task's
 * details and its actions. `notify(text, kind)` reports what happened.
 */
export class TasksView {
  constructor(notify) {
    this.notify = notify;
    this.filter = {};
    /** Cursors of the pages before this one; empty on the first page. */
    this.cursors = [];
    this.cursor = null;
    this.nextCursor = null;
    this.selected = null;
    this.serverNow = Date.now();
    $('filters').addEventListener('submit', (event) => {
      event.preventDefault();
      location.hash = `#/tasks?${this.formQuery()}`;
    });
    $('next-page').addEventListener('click', () => {
      this.cursors.push(this.cursor);
      this.cursor = this.nextCursor;
      void this.load();
    });
    $('first-page').addEventListener('click', () => {
      this.cursors = [];
      this.cursor = null;
      void this.load();
    });
    $('retry-dead').addEventListener('click', () => void this.retryDead());
  }

  /** Opened by the router with the URL's query. */
  show(query) {
    const filter = {};
    for (const name of FILTERS) if (query.get(name)) filter[name] = query.get(name);
    const form = $('filters');
    for (const name of FILTERS) {
      const value = filter[name] ?? '';
      form.elements[name].value = name.startsWith('due') && value ? value.slice(0, 19) : value;
    }
    this.filter = filter;
    this.cursors = [];
    this.cursor = null;
    $('retry-dead').hidden = filter.state !== 'dead';
    const task = query.get('task');
    void this.load();
    if (task) void this.open(task);
    else this.close();
  }

  /**
   * Each snapshot of the stream, while this view is open: the open task (one
   * row by id) follows what happens, and so does the first page of pending or
   * dead tasks. Other listings sort their matches, which on a table keeping
   * millions of finished tasks is no query to repeat every 2 s: they reload
   * when asked.
   */
  refresh(serverNow, visible) {
    this.serverNow = serverNow;
    if (!visible) return;
    const cheap = this.filter.state === 'pending' || this.filter.state === 'dead';
    if (cheap && this.cursors.length === 0 && this.cursor === null) void this.load(true);
    if (this.selected) void this.open(this.selected, true);
  }

  formQuery() {
    const form = $('filters');
    const query = new URLSearchParams();
    for (const name of FILTERS) {
      const value = form.elements[name].value.trim();
      if (!value) continue;
      // datetime-local has no zone: read as UTC, like every time on this page.
      query.set(
        name,
        name.startsWith('due') ? `${value.length === 16 ? `${value}:00` : value}Z` : value,
      );
    }
    return query.toString();
  }

  params() {
    const query = new URLSearchParams({ limit: String(PAGE) });
    for (const [name, value] of Object.entries(this.filter)) query.set(name, value);
    if (this.cursor) query.set('cursor', this.cursor);
    return query.toString();
  }

  async load(quiet = false) {
    let page;
    try {
      page = await api(`/tasks?${this.params()}`);
    } catch (error) {
      if (!quiet) this.notify(error.message, 'bad');
      return;
    }
    this.nextCursor = page.nextCursor;
    const rows = page.items.map((task) =>
      el(
        'tr',
        {
          'data-id': task.id,
          class: task.id === this.selected ? 'selected' : undefined,
          onclick: () => void this.open(task.id),
        },
        el('td', { class: 'num mono' }, task.id),
        el('td', { class: 'mono type', title: task.type }, task.type),
        el('td', { class: 'mono key', title: task.key ?? '' }, task.key ?? '–'),
        el('td', {}, statePill(task.state)),
        el('td', { title: `${instant(task.dueAt)} UTC` }, relative(task.dueAt, this.serverNow)),
        el('td', { class: 'num' }, `${task.attempts}/${task.maxAttempts}`),
      ),
    );
    $('tasks').tBodies[0].replaceChildren(...rows);
    $('tasks-empty').hidden = rows.length > 0;
    $('next-page').disabled = !page.nextCursor;
    $('first-page').disabled = this.cursors.length === 0 && this.cursor === null;
    $('page-note').textContent = `page ${this.cursors.length + 1} · ${rows.length} task(s)`;
  }

  close() {
    this.selected = null;
    $('details').hidden = true;
  }

  async open(id, quiet = false) {
    let details;
    try {
      details = await api(`/tasks/${encodeURIComponent(id)}`);
    } catch (error) {
      if (!quiet) this.notify(error.message, 'bad');
      return;
    }
    // A later click may have opened another task meanwhile.
    if (quiet && this.selected !== id) return;
    this.selected = id;
    for (const row of $('tasks').tBodies[0].rows)
      row.classList.toggle('selected', row.dataset.id === id);
    this.renderDetails(details);
  }

  renderDetails({ task, holder, inThisWheel }) {
    const now = this.serverNow;
    const item = (label, ...value) => [el('dt', {}, label), el('dd', {}, ...value)];
    const when = (iso) =>
      iso
        ? el('span', { title: `${instant(iso)} UTC` }, `${clock(iso)} UTC · ${relative(iso, now)}`)
        : '–';
    const panel = $('details');
    panel.hidden = false;
    panel.replaceChildren(
      el('h3', {}, `Task ${task.id} `, statePill(task.state)),
      el('div', { class: 'mono muted' }, task.type),
      el(
        'dl',
        {},
        item('key', el('span', { class: 'mono' }, task.key ?? '–')),
        item('due', when(task.dueAt)),
        item('attempts', `${task.attempts} of ${task.maxAttempts}`),
        task.executedAt
          ? item(
              'executed',
              when(task.executedAt),
              ` · ${duration(new Date(task.executedAt) - new Date(task.dueAt))} late`,
            )
          : [],
        task.cancelledAt ? item('cancelled', when(task.cancelledAt)) : [],
        task.deadAt ? item('dead since', when(task.deadAt)) : [],
        item(
          'held by',
          holder
            ? el('span', { class: 'mono' }, holder.id, holder.live ? '' : ' (lease expired)')
            : '–',
        ),
        item('in this wheel', inThisWheel ? 'yes' : 'no'),
        item('created', when(task.createdAt)),
        item('updated', when(task.updatedAt)),
        task.lastError
          ? item(
              'last error',
              el('span', { class: 'error-text mono', id: 'last-error' }, task.lastError),
            )
          : [],
      ),
      el('div', { class: 'muted' }, 'payload'),
      el('pre', { class: 'mono' }, JSON.stringify(task.payload, null, 2)),
      this.actions(task),
    );
  }

  actions(task) {
    const act = (label, path, body, done, kind) =>
      el(
        'button',
        {
          type: 'button',
          class: kind,
          'data-action': label,
          onclick: () => void this.act(task.id, path, body, done),
        },
        label,
      );
    if (task.state === 'dead') {
      return el(
        'div',
        { class: 'actions' },
        act('Retry', 'retry', undefined, `Task ${task.id} is pending again, due now.`, 'primary'),
      );
    }
    if (task.state !== 'pending')
      return el(
        'div',
        { class: 'actions muted' },
        `No action applies to a task once ${task.state}.`,
      );
    const delay = el('input', {
      value: '15m',
      'aria-label': 'delay',
      title: "From now: '30s', '15m', '2h', '1d'",
    });
    return el(
      'div',
      { class: 'actions' },
      act('Run now', 'run-now', undefined, `Task ${task.id} runs at the next tick.`, 'primary'),
      el(
        'span',
        { class: 'reschedule' },
        delay,
        el(
          'button',
          {
            type: 'button',
            onclick: () =>
              void this.act(
                task.id,
                'reschedule',
                { delay: delay.value.trim() },
                `Task ${task.id} rescheduled ${delay.value.trim()} from now.`,
              ),
          },
          'Reschedule',
        ),
      ),
      el(
        'button',
        {
          type: 'button',
          class: 'warn',
          onclick: () => {
            if (confirm(`Cancel task ${task.id} (${task.type})? It will never run.`)) {
              void this.act(task.id, 'cancel', undefined, `Task ${task.id} cancelled.`);
            }
          },
        },
        'Cancel',
      ),
    );
  }

  async act(id, action, body, done) {
    try {
      await api(`/tasks/${encodeURIComponent(id)}/${action}`, { method: 'POST', body });
      this.notify(done, 'good');
    } catch (error) {
      this.notify(error.message, 'bad');
    }
    await Promise.all([this.open(id, true), this.load(true)]);
  }

  async retryDead() {
    const { state: _state, ...filter } = this.filter;
    const described =
      Object.entries(filter)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ') || 'no other filter';
    if (!confirm(`Retry up to ${BULK_LIMIT} dead-lettered tasks (${described}), oldest due first?`))
      return;
    try {
      const result = await api('/tasks/retry-dead', {
        method: 'POST',
        body: { ...filter, limit: BULK_LIMIT },
      });
      const more = result.more ? ' More are left: click again.' : '';
      const skipped = result.skipped ? `, ${number(result.skipped)} no longer dead` : '';
      this.notify(`Retried ${number(result.retried.length)} task(s)${skipped}.${more}`, 'good');
    } catch (error) {
      this.notify(error.message, 'bad');
    }
    await this.load(true);
  }
}
