import { Injectable, Module } from '@nestjs/common';
import { DelayedTaskHandler, RecurringTask, type TaskContext } from 'nest-delay';
import { ManualClock } from 'nest-delay/testing';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';
import { createDelayTestApp, type DelayTestApp } from './delay-test-app.js';

// Two services on one database, each with task types of its own: every
// instance leases, fires and claims only the types it has handlers for
// (WindowPolicy.handles), so neither runs, nor dead-letters, the other's.
const ran: Array<{ service: string; type: string; instance: string }> = [];

@Injectable()
class ServiceAHandlers {
  @RecurringTask('own.a', { every: '1s' })
  everySecond(_payload: unknown, context: TaskContext) {
    ran.push({ service: 'a', type: 'own.a', instance: context.instanceId });
  }

  @DelayedTaskHandler('a.one-off')
  oneOff(_payload: unknown, context: TaskContext) {
    ran.push({ service: 'a', type: 'a.one-off', instance: context.instanceId });
  }
}

@Module({ providers: [ServiceAHandlers] })
class ServiceA {}

@Injectable()
class ServiceBHandlers {
  @RecurringTask('own.b', { every: '1s' })
  everySecond(_payload: unknown, context: TaskContext) {
    ran.push({ service: 'b', type: 'own.b', instance: context.instanceId });
  }
}

@Module({ providers: [ServiceBHandlers] })
class ServiceB {}

describeWithServer('two services sharing one database', () => {
  let db: TestDatabase;
  const clock = new ManualClock(Date.UTC(2026, 10, 1));
  const live = new Map<string, DelayTestApp>();

  const boot = async (instanceId: string, module: typeof ServiceA) => {
    // B only produces A's one-off tasks: it may schedule a type it has no handler for.
    const options = { instanceId, allowUnknownTypes: module === ServiceB };
    live.set(instanceId, await createDelayTestApp(db, options, { clock, modules: [{ module }] }));
  };
  const stop = async (instanceId: string) => {
    await live.get(instanceId)!.close();
    live.delete(instanceId);
  };
  /** Seconds of time, a second at a time, every live instance running what is due. */
  const run = async (seconds: number) => {
    for (let step = 0; step < seconds; step++) {
      clock.advance(1_000);
      await Promise.all([...live.values()].map((app) => app.tester.runDue()));
    }
  };
  const anyApp = () => live.values().next().value!;
  const dead = async () =>
    (
      await anyApp().query<{ n: number }>(
        `SELECT count(*)::int AS n FROM delayed_task WHERE dead_at IS NOT NULL`,
      )
    )[0].n;

  beforeAll(async () => {
    db = await createTestDatabase();
  });

  afterAll(async () => {
    for (const app of live.values()) await app.close();
    await db?.drop();
  });

  it('each runs only its own types, schedules and one-off tasks alike; none is dead-lettered', async () => {
    await boot('a-1', ServiceA);
    await boot('b-1', ServiceB);
    // B schedules a task of A's type, due at once: B neither holds nor runs it.
    const oneOff = await live.get('b-1')!.delay.schedule({ type: 'a.one-off', delay: 0 });
    await run(20);
    expect(ran.filter((r) => r.service === 'a').every((r) => r.instance === 'a-1')).toBe(true);
    expect(ran.filter((r) => r.service === 'b').every((r) => r.instance === 'b-1')).toBe(true);
    expect(ran.filter((r) => r.type === 'a.one-off')).toHaveLength(1);
    expect(ran.filter((r) => r.type === 'own.a').length).toBeGreaterThanOrEqual(15);
    expect(ran.filter((r) => r.type === 'own.b').length).toBeGreaterThanOrEqual(15);
    expect(await live.get('a-1')!.delay.get({ id: oneOff.id })).toMatchObject({
      state: 'executed',
    });
    expect(await dead()).toBe(0);
  });

  it("a rolling restart of one keeps its schedule firing, never by the other's instances", async () => {
    ran.length = 0;
    await boot('a-2', ServiceA);
    await run(5);
    await stop('a-1');
    await run(5);
    await boot('a-3', ServiceA);
    await run(20);
    const a = ran.filter((r) => r.type === 'own.a');
    expect(a.every((r) => r.instance.startsWith('a-'))).toBe(true);
    expect(a.length).toBeGreaterThanOrEqual(25);
    // Every second of the span, once: none lost while the first A stopped.
    const seconds = await anyApp().query<{ n: number; runs: number }>(
      `SELECT count(DISTINCT occurrence_at)::int AS n, count(*)::int AS runs FROM delayed_task
       WHERE schedule_name = 'own.a' AND executed_at IS NOT NULL`,
    );
    expect(seconds[0].runs).toBe(seconds[0].n);
    expect(ran.filter((r) => r.type === 'own.b').every((r) => r.instance === 'b-1')).toBe(true);
    expect(await dead()).toBe(0);
  });

  it('a task of a type no live instance runs waits, unleased, and runs once one starts', async () => {
    await stop('a-2');
    await stop('a-3');
    ran.length = 0;
    const waiting = await live.get('b-1')!.delay.schedule({ type: 'a.one-off', delay: 0 });
    await run(5);
    expect(ran.filter((r) => r.type === 'a.one-off')).toEqual([]);
    const [row] = await anyApp().query<{ locked_by: string | null; attempts: number }>(
      `SELECT locked_by, attempts FROM delayed_task WHERE id = $1`,
      [waiting.id],
    );
    expect(row).toEqual({ locked_by: null, attempts: 0 });
    // Overdue by a lease, a sixth heartbeat on: B counts it as waiting for a handler.
    await run(65);
    // (A's last occurrence, planned before A stopped, waits too.)
    expect(live.get('b-1')!.delay.stats().unhandledTypes).toMatchObject({ 'a.one-off': 1 });
    await boot('a-4', ServiceA);
    await run(2);
    expect(ran.filter((r) => r.type === 'a.one-off')).toEqual([
      { service: 'a', type: 'a.one-off', instance: 'a-4' },
    ]);
    await run(60);
    expect(live.get('b-1')!.delay.stats().unhandledTypes).toEqual({});
    expect(await dead()).toBe(0);
  });
});
