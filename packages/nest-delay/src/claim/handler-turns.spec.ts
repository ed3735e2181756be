import { runInTaskScope } from '../observer/task-scope.js';
import { HandlerTurns } from './handler-turns.js';

/** A statement that the test answers by hand, and the log of what was sent. */
function statements() {
  const sent: string[] = [];
  const answers = new Map<string, () => void>();
  const send = (name: string) => () => {
    sent.push(name);
    return new Promise<string>((resolve) => answers.set(name, () => resolve(name)));
  };
  const answer = async (name: string) => {
    answers.get(name)!();
    await settle();
  };
  return { sent, send, answer };
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
const as = <T>(id: string, fn: () => T) =>
  runInTaskScope({ id, type: 't', key: null, attempt: 1 }, fn);

describe('HandlerTurns', () => {
  it("holds a handler's turn from its first statement until it returns", async () => {
    const turns = new HandlerTurns(['1', '2'], async () => false);
    const { sent, send, answer } = statements();
    void as('1', () => turns.pass(send('a1')));
    void as('2', () => turns.pass(send('b1')));
    await settle();
    expect(sent).toEqual(['a1']);
    await answer('a1');
    // Answered, but handler 1 has not returned: it may send more, and 2 still waits.
    expect(sent).toEqual(['a1']);
    void as('1', () => turns.pass(send('a2')));
    await settle();
    expect(sent).toEqual(['a1', 'a2']);
    await answer('a2');
    turns.handlerReturned('1');
    await settle();
    expect(sent).toEqual(['a1', 'a2', 'b1']);
  });

  it("waits for the holder's statements to be answered before passing the turn", async () => {
    const turns = new HandlerTurns(['1', '2'], async () => false);
    const { sent, send, answer } = statements();
    void as('1', () => turns.pass(send('a1')));
    void as('2', () => turns.pass(send('b1')));
    turns.handlerReturned('1');
    await settle();
    expect(sent).toEqual(['a1']);
    await answer('a1');
    expect(sent).toEqual(['a1', 'b1']);
  });

  it("lets the engine's own statement through between handlers, for as long as it runs", async () => {
    const turns = new HandlerTurns(['1', '2'], async () => false);
    const { sent, send, answer } = statements();
    void as('1', () => turns.pass(send('a1')));
    void turns.pass(send('engine'));
    void as('2', () => turns.pass(send('b1')));
    turns.handlerReturned('1');
    await answer('a1');
    expect(sent).toEqual(['a1', 'engine']);
    await answer('engine');
    expect(sent).toEqual(['a1', 'engine', 'b1']);
  });

  it('gives a statement left behind by a returned handler a turn of its own', async () => {
    const turns = new HandlerTurns(['1', '2'], async () => false);
    const { sent, send, answer } = statements();
    turns.handlerReturned('1');
    void as('1', () => turns.pass(send('late')));
    void as('2', () => turns.pass(send('b1')));
    await settle();
    expect(sent).toEqual(['late']);
    await answer('late');
    expect(sent).toEqual(['late', 'b1']);
  });

  it('sends the waiting statements of one handler together, in the order they asked', async () => {
    const turns = new HandlerTurns(['1', '2', '3'], async () => false);
    const { sent, send, answer } = statements();
    void as('1', () => turns.pass(send('a1')));
    void as('3', () => turns.pass(send('c1')));
    void as('2', () => turns.pass(send('b1')));
    void as('3', () => turns.pass(send('c2')));
    turns.handlerReturned('1');
    await answer('a1');
    expect(sent).toEqual(['a1', 'c1', 'c2']);
  });

  it('counts the time a handler waited for its turn, and only that', async () => {
    const turns = new HandlerTurns(['1', '2'], async () => false);
    const { send, answer } = statements();
    void as('1', () => turns.pass(send('a1')));
    void as('2', () => turns.pass(send('b1')));
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(turns.waited('1')).toBe(0);
    expect(turns.waited('2')).toBeGreaterThanOrEqual(25);
    turns.handlerReturned('1');
    await answer('a1');
    const waited = turns.waited('2');
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(turns.waited('2')).toBe(waited);
  });

  it('passes the turn on when a statement fails', async () => {
    const turns = new HandlerTurns(['1'], async () => false);
    const sent: string[] = [];
    await expect(
      turns.pass(() => {
        sent.push('broken');
        return Promise.reject(new Error('boom'));
      }),
    ).rejects.toThrow('boom');
    await turns.pass(() => {
      sent.push('next');
      return Promise.resolve();
    });
    expect(sent).toEqual(['broken', 'next']);
  });

  it('asks, after a turn in which a statement failed, whether it left the transaction aborted', async () => {
    let asked = 0;
    const turns = new HandlerTurns(['1', '2'], async () => (asked++, false));
    const { sent, send, answer } = statements();
    await as('1', () =>
      turns.pass(() => Promise.reject(new Error('rolled back to its savepoint'))),
    ).catch(() => undefined);
    void as('2', () => turns.pass(send('b1')));
    turns.handlerReturned('1');
    await settle();
    expect(asked).toBe(1);
    expect(sent).toEqual(['b1']);
    await answer('b1');
    turns.handlerReturned('2');
    await turns.settled();
    expect(asked).toBe(1);
    expect(turns.abortedBy).toBeUndefined();
  });

  it('refuses every statement after a turn that left the transaction aborted, and names who did', async () => {
    const turns = new HandlerTurns(['1', '2', '3'], async () => true);
    const { sent, send } = statements();
    const first = as('1', () => turns.pass(() => Promise.reject(new Error('no such table'))));
    const second = as('2', () => turns.pass(send('b1'))).catch((error: Error) => error);
    await first.catch(() => undefined);
    turns.handlerReturned('1');
    await turns.settled();
    expect(await second).toEqual(
      expect.objectContaining({
        message: expect.stringMatching(/left the claim's transaction aborted/),
      }),
    );
    await expect(as('3', () => turns.pass(send('c1')))).rejects.toThrow(/aborted/);
    expect(sent).toEqual([]);
    expect(turns.abortedBy).toBe('1');
    expect([...turns.refused]).toEqual(['2', '3']);
  });
});
