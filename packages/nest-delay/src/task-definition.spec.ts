import { Injectable } from '@nestjs/common';
import { DelayedTaskHandler } from './delayed-task-handler.decorator.js';
import { defineTask } from './task-definition.js';
import type { TaskContext } from './task.types.js';
import { DELAYED_TASK_HANDLER } from './delay.constants.js';

// The lines marked @ts-expect-error are what the compiler must refuse: the
// lint's type check (tsc over src, specs included) fails if one compiles.
const CloseUnpaid = defineTask<{ orderId: string }>('order.close-unpaid');

describe('defineTask', () => {
  it('builds the request schedule() takes, with its type and payload', () => {
    expect(CloseUnpaid.with({ orderId: 'o-1' }, { delay: '30m', key: 'order:o-1' })).toEqual({
      type: 'order.close-unpaid',
      payload: { orderId: 'o-1' },
      delay: '30m',
      key: 'order:o-1',
    });
    expect(CloseUnpaid.with({ orderId: 'o-2' })).toEqual({
      type: 'order.close-unpaid',
      payload: { orderId: 'o-2' },
    });
  });

  it('refuses an empty type name at once', () => {
    expect(() => defineTask<{ a: number }>('')).toThrow(/task type name/);
  });

  it('checks payloads and durations at compile time', () => {
    // @ts-expect-error a payload of the wrong shape
    CloseUnpaid.with({ orderId: 42 });
    // @ts-expect-error a missing field
    CloseUnpaid.with({});
    // @ts-expect-error a misspelt duration
    CloseUnpaid.with({ orderId: 'o' }, { delay: '20 seconds' });
    CloseUnpaid.with({ orderId: 'o' }, { delay: 1_500 });
    CloseUnpaid.with({ orderId: 'o' }, { delay: '1.5s', runAt: undefined });
    expect(true).toBe(true);
  });

  it('refuses payload types that are not JSON at compile time', () => {
    // @ts-expect-error a Date comes back from jsonb as a string
    defineTask<{ at: Date }>('not.json.date');
    // @ts-expect-error a function is dropped by JSON
    defineTask<{ run: () => void }>('not.json.function');
    // @ts-expect-error nor does a bigint survive
    defineTask<{ n: bigint }>('not.json.bigint');
    defineTask<{ tags: string[]; note?: string; nested: { ok: boolean | null } }>('json.ok');
    expect(true).toBe(true);
  });

  it('ties a handler to its payload type, and leaves the metadata the explorer reads', () => {
    @Injectable()
    class Handlers {
      @DelayedTaskHandler(CloseUnpaid, { maxAttempts: 3 })
      close(payload: { orderId: string }, _context: TaskContext<{ orderId: string }>) {
        return payload.orderId;
      }

      // @ts-expect-error the handler takes another payload than the task's
      @DelayedTaskHandler(CloseUnpaid)
      wrong(payload: { orderId: number }) {
        return payload.orderId;
      }

      @DelayedTaskHandler('plain.string.type')
      untyped(payload: unknown) {
        return payload;
      }
    }
    const metadata = (name: keyof Handlers) =>
      Reflect.getMetadata(DELAYED_TASK_HANDLER, Handlers.prototype[name]) as unknown;
    expect(metadata('close')).toEqual({ type: 'order.close-unpaid', options: { maxAttempts: 3 } });
    expect(metadata('untyped')).toEqual({ type: 'plain.string.type', options: {} });
  });
});
