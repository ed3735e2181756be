import { Injectable, Module } from "@nestjs/common";
import type { QueryRunner } from "typeorm";
import { DelayedTaskHandler, type TaskContext } from "nest-delay";
import { ManualClock } from "nest-delay/testing";
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from "../support/test-database.js";
import { createDelayTestApp, type DelayTestApp } from "./delay-test-app.js";

/**
 * Issue 45: a pending task leased to a live instance and held nowhere in it
 * waits for the safety net (lease/stranded-sweep.ts), which warns "held
 * nowhere … an engine fault". Each sequence below once ended that way; each
 * now ends with the task leased where it is held, or to nobody, and the net
 * (`stats().rescued`) never has to hold anything again.
 */

const ran: Array<{ id: string; instance: string }> = [];

/** A type only instance 'b' has a handler for (another service, or another release). */
@Injectable()
class OnlyBHandlers {
  @DelayedTaskHandler("nowhere.b")
  run(_payload: unknown, context: TaskContext) {
    ran.push({ id: context.task.id, instance: context.instanceId });
  }
}

@Module({ providers: [OnlyBHandlers] })
class OnlyB {}

const SECOND = 1000;
const HOUR = 3600 * SECOND;

describeWithServer("a task leased here is held here", () => {
  let db: TestDatabase;
  const clock = new ManualClock(Date.UTC(2026, 10, 1));
  let a: DelayTestApp;
  let b: DelayTestApp;

  /** Moves the shared clock a second at a time, both instances running what is due. */
  const run = async (seconds: number) => {
    for (let step = 0; step < seconds; step++) {
      clock.advance(SECOND);
      await Promise.all([a, b].map((app) => app.tester.runDue()));
    }
  };
  const lockedBy = async (id: string) =>
    (
      await a.query<{ locked_by: string | null }>(
        `SELECT locked_by FROM delayed_task WHERE id = $1`,
        [id],
      )
    )[0].locked_by;

  beforeAll(async () => {
    db = await createTestDatabase();
    // 'a' may schedule b's type (a producer), as a service or release without its handler does.
    a = await createDelayTestApp(
      db,
      { instanceId: "a", allowUnknownTypes: true },
      { clock },
    );
    b = await createDelayTestApp(
      db,
      { instanceId: "b" },
      { clock, modules: [{ module: OnlyB }] },
    );
  });

  afterAll(async () => {
    await a?.close();
    await b?.close();
    await db?.drop();
  });

  beforeEach(() => {
    ran.length = 0;
  });

  describe("moved by an instance with no handler for its type", () => {
    /** A task of b's type, due beyond the window, so nobody leases it yet. */
    const later = async ({
      entity = null,
      dead = false,
      key = null,
    }: Shape) => {
      const now = new Date(clock.now());
      const [{ id }] = await a.query<{ id: string }>(
        `INSERT INTO delayed_task (type, payload, due_at, max_attempts, created_at, updated_at, entity, key, dead_at, attempts)
         VALUES ('nowhere.b', 'null'::jsonb, $1, 3, $2, $2, $3, $4, $5, $6) RETURNING id::text`,
        [
          new Date(now.getTime() + 2 * HOUR),
          now,
          entity,
          key,
          dead ? now : null,
          dead ? 3 : 0,
        ],
      );
      return id;
    };
    type Shape = {
      entity?: string | null;
      dead?: boolean;
      key?: string | null;
    };
    const moves: Array<[string, (id: string) => Promise<unknown>, Shape]> = [
      [
        "reschedule",
        (id) => a.delay.reschedule({ id }, { delay: 5 * SECOND }),
        {},
      ],
      ["revive", (id) => a.delay.revive({ id }), { dead: true }],
      [
        "rescheduleEntity",
        () =>
          a.delay.rescheduleEntity("thing:1", {
            to: new Date(clock.now() + 5 * SECOND),
          }),
        { entity: "thing:1" },
      ],
      [
        "a debounce",
        () =>
          a.delay.schedule({
            type: "nowhere.b",
            key: "nowhere:debounced",
            payload: null,
            delay: 5 * SECOND,
            ifExists: "debounce",
            maxWait: "1h",
          }),
        { key: "nowhere:debounced" },
      ],
    ];

    it.each(moves)(
      "%s: left unleased for an instance that runs it, never leased where nothing holds it",
      async (_name, move, shape) => {
        const rescued = a.delay.stats().rescued;
        const id = await later(shape);
        await move(id);
        // Not leased to 'a', which holds no task of a type it cannot run.
        expect(await lockedBy(id)).toBeNull();
        const { heartbeatMs } = b.delay["runtime"].ctx.options;
        await run(Math.ceil((5 * SECOND + 2 * heartbeatMs) / SECOND));
        expect(ran).toEqual([{ id, instance: "b" }]);
        expect(a.delay.stats().rescued).toBe(rescued);
      },
    );
  });

  describe("written while the instance stops", () => {
    it("is handed back with the rest, not left leased to an instance that has gone", async () => {
      const c = await createDelayTestApp(db, { instanceId: "c" }, { clock });
      const runtime = c.delay["runtime"];
      let locker: QueryRunner | undefined;
      try {
        const first = await c.delay.schedule({
          type: "test.effect",
          key: "nowhere:stop",
          payload: null,
          delay: 60 * SECOND,
        });
        expect(await lockedBy(first.id)).toBe("c");
        // The key's row is locked elsewhere: the replace below waits for it, in flight.
        locker = c.dataSource.createQueryRunner();
        await locker.startTransaction();
        await locker.query(
          `SELECT id FROM delayed_task WHERE id = $1 FOR UPDATE`,
          [first.id],
        );
        const replace = c.delay.schedule({
          type: "test.effect",
          key: "nowhere:stop",
          ifExists: "replace",
          payload: null,
          delay: 30 * SECOND,
        });
        while ((await waitingOnLocks(a)) === 0) await tick();
        // Leases are decided while running: this one was, for 'c'.
        const stopped = runtime.stop();
        let done = false;
        void stopped.then(() => (done = true));
        // The stop either waits for the write in flight, or (before the fix) finishes without it.
        while (!done && !runtime.writes.awaited) await tick();
        await locker.commitTransaction();
        await locker.release();
        locker = undefined;
        await replace;
        await stopped;
        // Handed back, as every task of a stopped instance is: another instance's loader takes it.
        expect(await lockedBy(first.id)).toBeNull();
      } finally {
        await locker?.rollbackTransaction().catch(() => undefined);
        await locker?.release().catch(() => undefined);
        await c.close();
      }
    });
  });
});

const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

/** Sessions of this database waiting for a lock. */
async function waitingOnLocks(app: DelayTestApp): Promise<number> {
  const [{ n }] = await app.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
     WHERE datname = current_database() AND wait_event_type = 'Lock'`,
  );
  return n;
}
