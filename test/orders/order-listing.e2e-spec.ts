import { createTestApp, type TestApp } from '../support/app-factory.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { MINUTE, OrdersApi, SECOND, type OrderJson } from './orders-api.js';

let db: TestDatabase;
let t: TestApp;
let api: OrdersApi;
/** Created one second apart, oldest first. */
const orders: OrderJson[] = [];

/** An admin's list: every user's orders. */
const list = async (query: string) =>
  (await api.as('lister', { admin: true }).get(`/orders${query}`).expect(200)).body;

/** Follows nextCursor until it is null; returns every page's ids. */
async function allPages(query: string): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor: string | null = null;
  do {
    const sep = query ? '&' : '?';
    const page: { items: OrderJson[]; nextCursor: string | null } = await list(
      cursor === null ? query : `${query}${sep}cursor=${encodeURIComponent(cursor)}`,
    );
    pages.push(page.items.map((o) => o.id));
    cursor = page.nextCursor;
  } while (cursor !== null && pages.length < 100);
  return pages;
}

beforeAll(async () => {
  db = await createTestDatabase();
  t = await createTestApp(db);
  api = new OrdersApi(t);
  // 25 orders of three users: ann (0, 3, 6...), bob, cy; some paid, some cancelled.
  for (let i = 0; i < 25; i++) {
    t.clock.advance(SECOND);
    const order = await api.createOrder({
      userId: ['ann', 'bob', 'cy'][i % 3],
      amountCents: 100 + i,
    });
    if (i % 4 === 1) await api.action(order.id, 'pay').expect(200);
    if (i % 4 === 2) await api.action(order.id, 'cancel').expect(200);
    orders.push(await api.get(order.id));
  }
});

afterAll(async () => {
  await t?.app.close();
  await db?.drop();
});

const newestFirst = (items: OrderJson[]) => [...items].reverse().map((o) => o.id);

describe('GET /orders', () => {
  it('lists newest first, 20 by default, with a cursor to the rest', async () => {
    const page = await list('');
    expect(page.items).toHaveLength(20);
    expect(page.items.map((o: OrderJson) => o.id)).toEqual(newestFirst(orders).slice(0, 20));
    expect(page.items[0]).toEqual(orders[24]);
    expect(typeof page.nextCursor).toBe('string');
    const rest = await list(`?cursor=${page.nextCursor}`);
    expect(rest.items.map((o: OrderJson) => o.id)).toEqual(newestFirst(orders).slice(20));
    expect(rest.nextCursor).toBeNull();
  });

  it('pages through everything with nextCursor until null, each order once', async () => {
    const pages = await allPages('?limit=7');
    expect(pages.map((p) => p.length)).toEqual([7, 7, 7, 4]);
    expect(pages.flat()).toEqual(newestFirst(orders));
  });

  it('ends with a null cursor when the last page is exactly full', async () => {
    const pages = await allPages('?limit=5');
    expect(pages.map((p) => p.length)).toEqual([5, 5, 5, 5, 5]);
  });

  it('filters by status and by user, and by both, across pages', async () => {
    for (const status of ['PENDING_PAYMENT', 'PAID', 'CLOSED', 'FINISHED']) {
      const expected = newestFirst(orders.filter((o) => o.status === status));
      expect((await allPages(`?status=${status}&limit=3`)).flat()).toEqual(expected);
    }
    expect((await allPages('?userId=bob&limit=2')).flat()).toEqual(
      newestFirst(orders.filter((o) => o.userId === 'bob')),
    );
    expect((await allPages('?userId=ann&status=PAID')).flat()).toEqual(
      newestFirst(orders.filter((o) => o.userId === 'ann' && o.status === 'PAID')),
    );
    expect(await list('?userId=nobody')).toEqual({ items: [], nextCursor: null });
  });

  it('does not repeat or skip orders when new ones arrive between pages', async () => {
    const first = await list('?limit=10');
    t.clock.advance(MINUTE);
    const newer = await api.createOrder({ userId: 'ann', amountCents: 1 });
    const second = await list(`?limit=10&cursor=${first.nextCursor}`);
    expect(second.items.map((o: OrderJson) => o.id)).toEqual(newestFirst(orders).slice(10, 20));
    expect((await list('?limit=1')).items[0].id).toBe(newer.id);
  });

  it("lists a user's own orders only, across pages, and refuses another user's filter", async () => {
    const ann = api.as('ann');
    const own = newestFirst(orders.filter((o) => o.userId === 'ann'));
    const first = (await ann.get('/orders?limit=3').expect(200)).body;
    const second = (await ann.get(`/orders?limit=10&cursor=${first.nextCursor}`).expect(200)).body;
    const ids = [...first.items, ...second.items].map((o: OrderJson) => o.id);
    // Her newer order of the test above comes first; then the 9 of the setup.
    expect(ids.slice(1)).toEqual(own);
    expect((await ann.get('/orders?userId=ann&limit=100').expect(200)).body.items).toHaveLength(10);
    const refused = await ann.get('/orders?userId=bob').expect(403);
    expect(refused.body.message).toContain('"bob"');
  });

  it('orders created in the same millisecond still page without gaps', async () => {
    const same = await Promise.all(
      [1, 2, 3, 4, 5].map(() => api.createOrder({ userId: 'same-ms', amountCents: 5 })),
    );
    const pages = await allPages('?userId=same-ms&limit=2');
    expect(pages.flat().sort()).toEqual(same.map((o) => o.id).sort());
    expect(pages.map((p) => p.length)).toEqual([2, 2, 1]);
  });
});
