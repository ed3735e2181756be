import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTestDatabase } from '../support/test-database.js';
import { ADMIN_TOKEN, TEST_TYPE, createAdminTestApp, useAdminTestApp } from './admin-test-app.js';

interface StreamEvent {
  event: string;
  data: any;
}

/** An open Server-Sent Events connection: `next()` resolves with the next event as it arrives. */
class EventStream {
  private buffer = '';
  private readonly events: StreamEvent[] = [];
  private waiting: ((event: StreamEvent) => void) | undefined;

  constructor(
    readonly response: http.IncomingMessage,
    private readonly request: http.ClientRequest,
  ) {
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => {
      this.buffer += chunk;
      let end: number;
      while ((end = this.buffer.indexOf('\n\n')) !== -1) {
        const block = this.buffer.slice(0, end);
        this.buffer = this.buffer.slice(end + 2);
        const field = (name: string) =>
          block
            .split('\n')
            .filter((line) => line.startsWith(`${name}: `))
            .map((line) => line.slice(name.length + 2))
            .join('\n');
        if (!block.includes('data: ')) continue;
        this.push({ event: field('event'), data: JSON.parse(field('data')) });
      }
    });
  }

  next(): Promise<StreamEvent> {
    const ready = this.events.shift();
    if (ready) return Promise.resolve(ready);
    return new Promise((resolve) => (this.waiting = resolve));
  }

  close(): void {
    this.request.destroy();
  }

  private push(event: StreamEvent) {
    const waiting = this.waiting;
    this.waiting = undefined;
    if (waiting) waiting(event);
    else this.events.push(event);
  }
}

describe('the live stream', () => {
  const ctx = useAdminTestApp({ ADMIN_TOKEN, DELAY_WHEEL_SLOTS: '60' });
  let port = 0;

  beforeAll(async () => {
    const server = ctx.t.app.getHttpServer() as http.Server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  const opened: EventStream[] = [];
  // A stream left open would keep the server from closing.
  afterEach(() => opened.splice(0).forEach((stream) => stream.close()));

  function open(path: string, token = ADMIN_TOKEN): Promise<EventStream> {
    return new Promise((resolve, reject) => {
      const request = http.get(
        { host: '127.0.0.1', port, path, headers: { Authorization: `Bearer ${token}` } },
        (response) => {
          const stream = new EventStream(response, request);
          opened.push(stream);
          resolve(stream);
        },
      );
      request.on('error', reject);
    });
  }

  /** Resolves once `done()` holds, checking after each turn of the event loop (no fixed sleep). */
  async function until(done: () => boolean) {
    for (let turn = 0; !done(); turn++) {
      if (turn > 10_000) throw new Error('condition never held');
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  it('sends a snapshot at once and another each time 2 s pass on the clock, until the client leaves', async () => {
    const { t } = ctx;
    const stream = await open('/admin/api/stream?regions=6');
    expect(stream.response.statusCode).toBe(200);
    expect(stream.response.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(stream.response.headers['cache-control']).toContain('no-store');

    const first = await stream.next();
    expect(first.event).toBe('snapshot');
    expect(first.data.counts.states.pending).toEqual(expect.objectContaining({ capped: false }));
    expect(first.data.instances).toEqual([expect.objectContaining({ self: true, live: true })]);
    expect(first.data.wheel).toMatchObject({ slots: 60, size: 0 });
    expect(first.data.wheel.regions).toHaveLength(6);
    // The task types with their limits, as GET /admin/api/types has them.
    expect(first.data.types).toContainEqual(
      expect.objectContaining({ type: TEST_TYPE, paused: false, effective: null, waiting: 0 }),
    );
    expect(first.data.pulse.limitWait).toEqual([]);

    await t.delay.schedule({ type: TEST_TYPE, delay: '30s' });
    t.clock.advance(2_000);
    const second = await stream.next();
    expect(second.data.wheel.size).toBe(1);
    expect(second.data.wheel.now).toBe(new Date(t.clock.now()).toISOString());

    // The stream's timer for the next snapshot goes when the client does (the clock stands still meanwhile).
    const timers = t.clock.pendingTimers;
    stream.close();
    await until(() => t.clock.pendingTimers === timers - 1);
  });

  it('needs the token, and refuses a bad regions with a 400 before streaming', async () => {
    const refused = await open('/admin/api/stream', 'wrong-token');
    expect(refused.response.statusCode).toBe(401);
    refused.close();
    const bad = await open('/admin/api/stream?regions=0');
    expect(bad.response.statusCode).toBe(400);
    bad.close();
  });
});

describe('shutting down with a stream open', () => {
  it('ends the stream, so the app closes instead of waiting for the client', async () => {
    const db = await createTestDatabase();
    try {
      const t = await createAdminTestApp(db);
      const server = t.app.getHttpServer() as http.Server;
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as AddressInfo;
      const response = await new Promise<http.IncomingMessage>((resolve) =>
        http.get(
          {
            host: '127.0.0.1',
            port,
            path: '/admin/api/stream',
            headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
          },
          resolve,
        ),
      );
      expect(response.statusCode).toBe(200);
      const ended = new Promise((resolve) => response.on('end', resolve));
      response.resume();
      await t.close();
      await ended;
    } finally {
      await db.drop();
    }
  });
});
