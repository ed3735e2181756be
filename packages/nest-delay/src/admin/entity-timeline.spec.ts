import type { TaskRow } from '../tasks/task-row.js';
import { buildTimeline } from './entity-timeline.js';

const at = (min: number) => new Date(Date.UTC(2026, 0, 1, 0, min));

function row(over: Partial<TaskRow>): TaskRow & { trace_id: string | null } {
  return {
    id: '1',
    type: 'order.close',
    key: null,
    entity: 'order:1',
    payload: null,
    due_at: at(10),
    executed_at: null,
    cancelled_at: null,
    dead_at: null,
    attempts: 0,
    max_attempts: 5,
    last_error: null,
    locked_by: null,
    created_at: at(0),
    updated_at: at(0),
    trace_id: 'abc',
    ...over,
  };
}

const event = (id: string, min: number, name: string, over: object = {}) => ({
  id,
  task_id: '1',
  at: at(min),
  event: name as never,
  attempt: null,
  due_at: null,
  duration_ms: null,
  detail: null,
  trace_id: null,
  instance: null,
  ...over,
});

const retention = { keepFinishedMs: 3_600_000, keepDeadMs: null };

describe('buildTimeline', () => {
  it("carries each attempt's instance to its fate, and adds the completion from the row", () => {
    const tl = buildTimeline(
      'order:1',
      [row({ executed_at: at(12), attempts: 2 })],
      [
        event('4', 12, 'started', { attempt: 2, instance: 'b' }),
        event('1', 0, 'scheduled', { trace_id: 'abc' }),
        event('2', 10, 'started', { attempt: 1, instance: 'a' }),
        event('3', 11, 'retried', { attempt: 1, duration_ms: 900, detail: 'boom' }),
      ],
      retention,
    );
    expect(tl.entries.map((e) => [e.event, e.attempt, e.instance])).toEqual([
      ['scheduled', null, null],
      ['started', 1, 'a'],
      ['retried', 1, 'a'],
      ['started', 2, 'b'],
      ['executed', 2, 'b'],
    ]);
    expect(tl.due).toEqual([]);
    expect(tl.finishedForgottenAfterMs).toBe(3_600_000);
  });

  it('shows a task older than its history as scheduled at its creation, and lists what is due', () => {
    const tl = buildTimeline('order:1', [row({})], [], retention);
    expect(tl.entries).toMatchObject([
      { event: 'scheduled', at: at(0), traceId: 'abc', detail: expect.stringMatching(/task row/) },
    ]);
    expect(tl.due).toEqual([{ taskId: '1', type: 'order.close', key: null, dueAt: at(10) }]);
  });
});
