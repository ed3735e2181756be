import { Injectable, Module } from '@nestjs/common';
import { DelayLimits, DelayedTaskHandler } from 'nest-delay';
import { useDelayTestApp, type DelayTestApp } from './delay-test-app.js';

/** Issue 27: a paused type's backlog stays in the table, not in every instance's memory. */

let ran = 0;

@Injectable()
class BacklogHandlers {
  @DelayedTaskHandler('backlog.paused')
  run() {
    ran++;
  }
}

@Module({ providers: [BacklogHandlers] })
class BacklogModule {}

const BACKLOG = 100_000;
const app = useDelayTestApp(
  { instanceId: 'gate-bounded', concurrency: 4 },
  { modules: [{ module: BacklogModule }] },
);
let t: DelayTestApp;

beforeAll(() => {
  t = app.t;
});

describe('the limit gate under a paused backlog', () => {
  it('holds at most its capacity while paused, and every task runs once on resume', async () => {
    const limits = t.moduleRef.get(DelayLimits);
    await limits.pause('backlog.paused');
    const gate = t.delay['runtime'].dispatcher.gate;
    let most = 0;
    const add = gate.add.bind(gate);
    gate.add = (rows) => {
      add(rows);
      most = Math.max(most, gate.size);
    };
    // Overdue and held by no instance: the backlog drainer's to read.
    await t.query(
      `INSERT INTO delayed_task (type, payload, due_at, max_attempts, created_at, updated_at)
       SELECT 'backlog.paused', 'null'::jsonb, $1::timestamptz - n * interval '1 millisecond', 3, $1, $1
       FROM generate_series(1, $2::int) n`,
      [new Date(t.clock.now()), BACKLOG],
    );
    await t.tester.refresh();
    t.delay['runtime'].backlog.request();
    // Settled with room for a loaded machine: the drain reads the whole backlog (runDue allows 60 s).
    const settle = () => t.delay['runtime'].settle(240_000);
    await settle();
    await until(() => t.delay['runtime'].backlog.busy === false, 'the drain');
    await settle();
    expect(ran).toBe(0);
    // Not the backlog: a small part of it.
    expect(most).toBeLessThanOrEqual(BACKLOG / 10);
    expect(gate.capacity).toBeLessThanOrEqual(BACKLOG / 10);
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(gate.capacity);
    expect(gate.size).toBeLessThanOrEqual(gate.capacity);

    await limits.resume('backlog.paused');
    await until(
      async () => {
        await settle();
        return ran >= BACKLOG;
      },
      () => `the resumed backlog (${ran} ran)`,
    );
    const [{ runs }] = await t.query<{ runs: number }>(
      `SELECT count(*)::int AS runs FROM delayed_task
       WHERE type = 'backlog.paused' AND executed_at IS NOT NULL AND attempts = 1`,
    );
    expect(runs).toBe(BACKLOG);
    expect(ran).toBe(BACKLOG);
  }, 600_000);
});

async function until(check: () => boolean | Promise<boolean>, what: string | (() => string)) {
  for (let i = 0; i < 3000; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
}
