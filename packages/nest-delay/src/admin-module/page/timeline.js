import { api, ApiError, entityPrefix } from './api.js';
import { clock, duration, el, instant, number, relative, statePill } from './format.js';

const $ = (id) => document.getElementById(id);

/** The pill colour of each step: what it did to the task. */
const EVENT_KIND = {
  scheduled: 'pending',
  replaced: 'pending',
  debounced: 'pending',
  rescheduled: 'pending',
  revived: 'pending',
  started: 'started',
  retried: 'failed',
  snoozed: 'failed',
  charged: 'failed',
  executed: 'executed',
  cancelled: 'cancelled',
  dead: 'dead',
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * What the operator typed: an entity as is (`order:42`; entities are
 * case-sensitive), or, when the module has an entity prefix, a bare id read
 * as `<prefix><id>` (a uuid in lower case, whatever case it was pasted in).
 */
export const entityOf = (input) => {
  const value = input.trim();
  if (value === '' || value.includes(':') || !entityPrefix) return value;
  return `${entityPrefix}${UUID.test(value) ? value.toLowerCase() : value}`;
};

/** 2026-01-01 09:30:05.123 UTC: the steps of one attempt often fall within a second. */
const exact = (iso) =>
  el(
    'span',
    { title: iso },
    `${instant(iso)}.${String(new Date(iso).getUTCMilliseconds()).padStart(3, '0')}`,
  );

/** The error of a refused request, with the field the server names. */
function refusal(error) {
  if (!(error instanceof ApiError)) return error.message;
  const field = error.field ? `, field ${error.field}` : '';
  return `Refused (${error.status}${field}): ${error.message}`;
}

/**
 * Everything about one entity: search it, read its timeline
 * (each step of each task in time order, what is still due, what retention
 * forgot), and cancel or move every pending task of it at once.
 */
export class TimelineView {
  constructor(notify) {
    this.notify = notify;
    this.entity = null;
    this.serverNow = Date.now();
    $('timeline-prefix-note').hidden = !entityPrefix;
    $('timeline-search').addEventListener('submit', (event) => {
      event.preventDefault();
      const entity = entityOf($('timeline-query').value);
      if (!entity) return;
      location.hash = `#/timeline?${new URLSearchParams({ entity })}`;
    });
    $('entity-cancel').addEventListener('click', () => void this.cancel());
    $('entity-move').addEventListener('submit', (event) => {
      event.preventDefault();
      void this.move();
    });
  }

  /** Opened by the router with the URL's query. */
  show(query) {
    const entity = query.get('entity');
    $('timeline-query').value = entity ?? '';
    this.entity = entity || null;
    $('timeline-result').hidden = true;
    $('timeline-body').hidden = !this.entity;
    $('timeline-empty-search').hidden = Boolean(this.entity);
    if (this.entity) void this.load();
    else $('timeline-query').focus();
  }

  /** Each snapshot of the stream while open: the timeline is two reads by its index. */
  refresh(serverNow, visible) {
    this.serverNow = serverNow;
    if (visible && this.entity) void this.load(true);
  }

  async load(quiet = false) {
    const entity = this.entity;
    let timeline;
    try {
      timeline = await api(`/entities/${encodeURIComponent(entity)}/timeline`);
    } catch (error) {
      if (!quiet) this.result(refusal(error), 'bad');
      return;
    }
    // Another search may have been made meanwhile.
    if (entity !== this.entity) return;
    this.render(timeline);
  }

  render(timeline) {
    const pending = timeline.due.length;
    $('timeline-title').textContent = timeline.entity;
    $('timeline-note').textContent =
      `${number(timeline.tasks.length)} task(s) · ${number(timeline.entries.length)} step(s) · ${number(pending)} still due`;
    $('entity-cancel').disabled = pending === 0;
    $('entity-move-button').disabled = pending === 0;
    $('timeline-tasks').replaceChildren(
      ...timeline.tasks.map((task) =>
        el(
          'a',
          {
            class: 'task-chip',
            href: `#/tasks?task=${encodeURIComponent(task.id)}`,
            title: task.key ?? 'no key',
            'data-task': task.id,
          },
          el('span', { class: 'mono' }, `#${task.id} ${task.type}`),
          ' ',
          statePill(task.state),
        ),
      ),
    );
    this.renderDue(timeline.due);
    this.renderSteps(timeline.entries);
    $('timeline-retention').textContent = retentionNote(timeline);
  }

  renderDue(due) {
    $('timeline-due').tBodies[0].replaceChildren(
      ...(due.length > 0
        ? due.map((d) =>
            el(
              'tr',
              { 'data-task': d.taskId },
              el('td', { class: 'mono' }, exact(d.dueAt)),
              el('td', {}, relative(d.dueAt, this.serverNow)),
              el('td', { class: 'mono' }, `#${d.taskId} ${d.type}`),
              el('td', { class: 'mono key', title: d.key ?? '' }, d.key ?? '–'),
            ),
          )
        : [el('tr', {}, el('td', { colspan: 4, class: 'muted' }, 'Nothing is due.'))]),
    );
  }

  renderSteps(entries) {
    const rows = entries.map((e) =>
      el(
        'tr',
        { 'data-event': e.event, 'data-task': e.taskId },
        el('td', { class: 'mono' }, exact(e.at)),
        el('td', { class: 'mono type', title: e.key ?? '' }, `#${e.taskId} ${e.type}`),
        el(
          'td',
          {},
          el('span', { class: `pill step-${EVENT_KIND[e.event] ?? 'pending'}` }, e.event),
        ),
        el('td', { class: 'num' }, e.attempt ?? '–'),
        el('td', { class: 'mono instance' }, e.instance ?? '–'),
        el(
          'td',
          {
            class: 'num',
            title: e.event === 'executed' ? 'A completed attempt records no duration' : undefined,
          },
          e.durationMs === null ? '–' : duration(e.durationMs),
        ),
        el('td', { class: 'step-detail' }, ...detailOf(e)),
        el('td', { class: 'mono trace' }, e.traceId ?? '–'),
      ),
    );
    $('timeline-steps').tBodies[0].replaceChildren(
      ...(rows.length > 0
        ? rows
        : [
            el(
              'tr',
              {},
              el(
                'td',
                { colspan: 8, class: 'muted' },
                'No task of this entity is known: none was scheduled, or all were pruned (see below).',
              ),
            ),
          ]),
    );
  }

  /** Shows what an action did (or why it was refused) above the timeline, and in the banner. */
  result(text, kind) {
    const node = $('timeline-result');
    node.hidden = false;
    node.className = `result ${kind}`;
    node.textContent = text;
    this.notify(text, kind);
  }

  async cancel() {
    const entity = this.entity;
    if (!confirm(`Cancel every pending task of ${entity}? They will never run.`)) return;
    try {
      const result = await api(`/entities/${encodeURIComponent(entity)}/cancel`, {
        method: 'POST',
        body: {},
      });
      this.result(`Cancelled ${changed(result)} of ${entity}.`, 'good');
    } catch (error) {
      this.result(refusal(error), 'bad');
    }
    await this.load(true);
  }

  async move() {
    const entity = this.entity;
    const by = $('entity-move-by').value.trim();
    if (!confirm(`Move every pending task of ${entity} ${by} later?`)) return;
    try {
      const result = await api(`/entities/${encodeURIComponent(entity)}/reschedule`, {
        method: 'POST',
        body: { by },
      });
      this.result(`Moved ${changed(result)} of ${entity} ${by} later.`, 'good');
    } catch (error) {
      this.result(refusal(error), 'bad');
    }
    await this.load(true);
  }
}

/** "2 task(s) (order.close-unpaid 1, order.auto-review 1)", or "no task: none was pending". */
function changed({ ids, byType }) {
  if (ids.length === 0) return 'no task: none was pending';
  const types = Object.entries(byType)
    .map(([type, n]) => `${type} ${n}`)
    .join(', ');
  return `${ids.length} task(s) (${types}: #${ids.join(', #')})`;
}

/** The step's own facts: the due time it was given, its error or reason. */
function detailOf(e) {
  const due = e.dueAt ? ` ${clock(e.dueAt)}` : '';
  const lead = {
    scheduled: e.dueAt ? `due${due}` : '',
    debounced: `pushed back to${due}`,
    replaced: `due${due}`,
    rescheduled: `moved to${due}`,
    revived: `due${due}`,
    retried: `again at${due}`,
    snoozed: `until${due}`,
    executed: 'completed',
  }[e.event];
  const parts = [];
  if (lead) parts.push(el('span', {}, lead));
  if (e.detail) {
    const failed = e.event === 'retried' || e.event === 'dead';
    parts.push(
      el(
        'span',
        { class: failed ? 'error-text mono' : 'muted' },
        `${lead ? ' · ' : ''}${e.detail}`,
      ),
    );
  }
  return parts.length > 0 ? parts : ['–'];
}

/** What the timeline cannot know: tasks the pruner removed, with their history. */
function retentionNote({ finishedForgottenAfterMs: finished, deadForgottenAfterMs: dead }) {
  const deadText =
    dead === null ? 'dead letters are kept' : `dead letters ${duration(dead)} after they died`;
  if (finished === null && dead === null)
    return 'Retention keeps every task and its history: nothing of this entity was pruned.';
  const finishedText =
    finished === null
      ? 'executed and cancelled tasks are kept'
      : `executed and cancelled tasks are pruned, history and all, ${duration(finished)} after they finished`;
  return `What this timeline no longer knows: ${finishedText}; ${deadText}. A task pruned before now is not shown at all, so an older entity may have had more.`;
}
