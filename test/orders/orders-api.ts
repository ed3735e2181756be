import request from 'supertest';
import { DataSource } from 'typeorm';
import { createTestApp, type TestApp } from '../support/app-factory.js';
import { bearer, type TokenOptions } from '../support/auth.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;

/** An order as the API returns it, loosely typed for assertions. */
export type OrderJson = Record<string, any> & { id: string; status: string };
export type EventJson = { type: string; at: string; by: string; data: Record<string, unknown> };

/** Who acts when a test does not say: the user of createOrder's default body. */
export const DEFAULT_USER = 'user-1';

/** Requests with one user's bearer token. */
export interface UserHttp {
  get(path: string): request.Test;
  post(path: string, body?: object): request.Test;
}

/**
 * The orders API over HTTP, the clock, and a look into the tables behind
 * them. Its helpers act as a user, with that user's token: createOrder as
 * the body's userId (the user creating their own order), get, history and
 * action as the user who created the order through createOrder (DEFAULT_USER
 * for any other id). `as(userId)` picks the user; `http()` sends no token.
 */
export class OrdersApi {
  /** Who created each order through createOrder, by id. */
  private readonly owners = new Map<string, string>();

  constructor(readonly t: TestApp) {}

  http() {
    return request(this.t.app.getHttpServer());
  }

  /** Requests as `userId` (with `{ admin: true }`, as an admin). */
  as(userId: string, options?: TokenOptions): UserHttp {
    const authorization = bearer(userId, options);
    return {
      get: (path) => this.http().get(path).set('Authorization', authorization),
      post: (path, body) => {
        const req = this.http().post(path).set('Authorization', authorization);
        return body === undefined ? req : req.send(body);
      },
    };
  }

  /** Requests as the user who created order `id` through createOrder. */
  asOwnerOf(id: string): UserHttp {
    return this.as(this.owners.get(id) ?? DEFAULT_USER);
  }

  async createOrder(
    body: Record<string, unknown> = { userId: DEFAULT_USER, amountCents: 1999 },
  ): Promise<OrderJson> {
    const user = typeof body.userId === 'string' ? body.userId : DEFAULT_USER;
    const res = await this.as(user).post('/orders', body).expect(201);
    const order = res.body as OrderJson;
    this.owners.set(order.id, order.userId);
    return order;
  }

  async get(id: string): Promise<OrderJson> {
    return (await this.asOwnerOf(id).get(`/orders/${id}`).expect(200)).body as OrderJson;
  }

  async history(id: string): Promise<EventJson[]> {
    return (await this.asOwnerOf(id).get(`/orders/${id}/history`).expect(200)).body as EventJson[];
  }

  /** POSTs an action (pay, cancel, finish, review) as the order's user and returns the response. */
  action(id: string, action: string, body?: Record<string, unknown>) {
    return this.asOwnerOf(id).post(`/orders/${id}/${action}`, body);
  }

  /** Moves the ManualClock and waits until every task due by then has run. */
  async advance(ms: number) {
    return this.t.delay.advance(ms);
  }

  /** Moves the ManualClock to `at` and waits until every task due by then has run. */
  async advanceTo(at: number) {
    return this.t.delay.advanceTo(at);
  }

  /**
   * `advanceTo`, then loads the window at once and runs what it found. A task
   * that a handler schedules in its claim transaction, due at once (the
   * customer notification a close schedules), can fire before that
   * transaction commits: its claim then finds nothing, and the engine finds
   * the task at its next heartbeat (a third of DELAY_LEASE), which a
   * ManualClock reaches only when moved that far.
   */
  async advanceToAndLoad(at: number): Promise<void> {
    await this.t.delay.advanceTo(at);
    await this.t.delay.refresh();
    await this.t.delay.runDue();
  }

  /** `advanceToAndLoad`, by `ms` from now. */
  advanceAndLoad(ms: number): Promise<void> {
    return this.advanceToAndLoad(this.t.clock.now() + ms);
  }

  query<T = any>(sql: string, params: unknown[] = []): Promise<T[]> {
    return this.t.app.get(DataSource).query(sql, params);
  }

  /** Rows in every table a request can write. */
  async rowCounts(): Promise<Record<string, number>> {
    const [row] = await this.query(`
      SELECT (SELECT count(*) FROM orders)::int AS orders,
             (SELECT count(*) FROM order_event)::int AS order_event,
             (SELECT count(*) FROM delayed_task)::int AS delayed_task,
             (SELECT count(*) FROM user_idempotency_key)::int AS user_idempotency_key`);
    return row;
  }

  /** The delayed_task rows with this key, oldest first, with their state. */
  tasks(key: string) {
    return this.query<{ id: string; type: string; state: string; due_at: Date }>(
      `SELECT id, type, due_at,
              CASE WHEN executed_at IS NOT NULL THEN 'executed' WHEN cancelled_at IS NOT NULL THEN 'cancelled'
                   WHEN dead_at IS NOT NULL THEN 'dead' ELSE 'pending' END AS state
       FROM delayed_task WHERE key = $1 ORDER BY id`,
      [key],
    );
  }
}

export interface OrdersTestContext {
  db: TestDatabase;
  t: TestApp;
  api: OrdersApi;
}

/**
 * Gives a test file its own database and app: registers the beforeAll that
 * creates them and the afterAll that closes and drops them. Read the fields
 * inside tests or hooks, once beforeAll has run.
 */
export function useOrdersApp(env: Record<string, string> = {}): OrdersTestContext {
  const context = {} as OrdersTestContext;
  beforeAll(async () => {
    context.db = await createTestDatabase();
    context.t = await createTestApp(context.db, env);
    context.api = new OrdersApi(context.t);
  });
  afterAll(async () => {
    await context.t?.app.close();
    await context.db?.drop();
  });
  return context;
}
