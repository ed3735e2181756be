import { currentTask } from '../observer/task-scope.js';
import type { QueryGate } from '../store/sql.js';
import type { TaskId } from '../task.types.js';
import { Leads } from './lead-time.js';

/** A statement sent by no handler of the claim (the engine's own): it holds the turn while it runs. */
type Owner = TaskId | symbol;

/**
 * Lets the handlers of one claim run at once while their statements on the
 * claim's connection take turns. A handler takes the turn with its first
 * statement and keeps it until it returns, so what each one does in the
 * transaction is done as if the handlers had run one after another (in the
 * order they first asked): no handler reads another's half-done writes, and
 * a handler's savepoints (TypeORM's nested transactions) nest only with its
 * own. What a handler does before its first statement (an HTTP call, a
 * wait) overlaps with the others: that is what a batch of such handlers
 * gains, where one after another would add up their waits.
 *
 * A statement belongs to the handler whose task scope it runs in; any other
 * (the engine's own, or a task's left behind after its handler returned)
 * takes the turn for as long as it runs. Statements are let through in the
 * order they asked, a handler's all at once when its turn comes.
 */
export class HandlerTurns implements QueryGate {
  private holder: Owner | undefined;
  /** Statements of the holder not yet answered. */
  private holderRunning = 0;
  private readonly waiting: Array<{ owner: Owner; go: () => void; refuse: () => void }> = [];
  /** The owner whose turn ended with the transaction aborted: nobody goes after it. */
  private aborter: Owner | undefined;
  /** Handlers whose statements were refused because of it. */
  readonly refused = new Set<TaskId>();
  private readonly ids: Set<TaskId>;
  private readonly returned = new Set<TaskId>();
  /** Each handler's lead (lead-time.ts). */
  readonly leads = new Leads();
  /** Time each handler spent waiting for its turn, and when its current wait began. */
  private readonly waitedMs = new Map<TaskId, number>();
  private readonly waitingSince = new Map<TaskId, number>();

  /** A statement of this turn failed: whether it left the transaction aborted is asked at its end. */
  private failedInTurn = false;
  private probing: Promise<void> | undefined;

  /**
   * `ids`: the claim's tasks whose handlers run at once. `aborted`: whether
   * the transaction is aborted (a statement failed and nothing rolled back
   * to a savepoint), asked at the end of a turn in which a statement failed.
   */
  constructor(
    ids: Iterable<TaskId>,
    private readonly aborted: () => Promise<boolean>,
  ) {
    this.ids = new Set(ids);
  }

  /**
   * The task whose handler left the transaction aborted when its turn
   * ended (it swallowed a failed statement, or failed by one), or a symbol
   * when a statement of no running handler did; undefined while it is not.
   * The handlers after it never got the turn: their statements were
   * refused (`refused`), so their failures are not theirs.
   */
  get abortedBy(): Owner | undefined {
    return this.aborter;
  }

  /** Sends a statement (`send`) when its owner has the turn. */
  pass<T>(send: () => Promise<T>): Promise<T> {
    const id = currentTask()?.id;
    const owner: Owner =
      id !== undefined && this.ids.has(id) && !this.returned.has(id) ? id : Symbol('statement');
    if (typeof owner === 'string') this.leads.statement(owner);
    if (this.aborter !== undefined) return this.refuse(owner);
    if (this.holder === undefined) this.holder = owner;
    if (this.holder === owner) return this.run(send);
    if (typeof owner === 'string' && !this.waitingSince.has(owner))
      this.waitingSince.set(owner, performance.now());
    return new Promise<void>((go, refuse) =>
      this.waiting.push({ owner, go, refuse: () => refuse(refusal()) }),
    ).then(() => this.run(send));
  }

  /** The handler of `id` returned (or threw): once its statements are answered, the next owner goes. */
  handlerReturned(id: TaskId): void {
    this.returned.add(id);
    if (this.holder === id && this.holderRunning === 0) this.next();
  }

  /** How long the handler of `id` has waited for its turn: its timeout does not count that time. */
  waited(id: TaskId): number {
    const since = this.waitingSince.get(id);
    return (this.waitedMs.get(id) ?? 0) + (since === undefined ? 0 : performance.now() - since);
  }

  private run<T>(send: () => Promise<T>): Promise<T> {
    this.holderRunning++;
    const answered = () => {
      if (--this.holderRunning > 0) return;
      const holder = this.holder!;
      if (typeof holder === 'symbol' || this.returned.has(holder)) this.next();
    };
    let sent: Promise<T>;
    try {
      sent = send();
    } catch (error) {
      answered();
      throw error;
    }
    return sent.then(
      (value) => {
        answered();
        return value;
      },
      (error: unknown) => {
        this.failedInTurn = true;
        answered();
        throw error;
      },
    );
  }

  private refuse<T>(owner: Owner): Promise<T> {
    if (typeof owner === 'string') this.refused.add(owner);
    return Promise.reject(refusal());
  }

  /**
   * The turn passes to the owner that asked first; all of its waiting
   * statements go. Unless the turn that ended left the transaction aborted:
   * then every statement waiting, and every one asked later, is refused.
   */
  private next(): void {
    const ended = this.holder!;
    if (!this.failedInTurn) return this.grant();
    // Asked before anyone else goes (the turn stays taken meanwhile): the
    // answer comes after the failed statement's, so it is what that left.
    this.failedInTurn = false;
    this.holder = Symbol('probe');
    this.probing = this.aborted().then(
      (aborted) => this.grant(aborted ? ended : undefined),
      () => this.grant(ended),
    );
  }

  /** Resolves once no probe is in flight: `abortedBy` is known for every turn that ended. */
  async settled(): Promise<void> {
    while (this.probing) {
      const probing = this.probing;
      await probing;
      if (this.probing === probing) this.probing = undefined;
    }
  }

  private grant(aborter?: Owner): void {
    this.holder = undefined;
    this.aborter ??= aborter;
    if (this.aborter !== undefined) {
      for (const entry of this.waiting.splice(0)) {
        if (typeof entry.owner === 'string') this.refused.add(entry.owner);
        entry.refuse();
      }
      return;
    }
    const first = this.waiting[0];
    if (!first) return;
    const { owner } = first;
    this.holder = owner;
    if (typeof owner === 'string') {
      const since = this.waitingSince.get(owner);
      this.waitingSince.delete(owner);
      if (since !== undefined)
        this.waitedMs.set(owner, (this.waitedMs.get(owner) ?? 0) + performance.now() - since);
    }
    for (let index = 0; index < this.waiting.length;) {
      const entry = this.waiting[index];
      if (entry.owner !== owner) index++;
      else {
        this.waiting.splice(index, 1);
        entry.go();
      }
    }
  }
}

function refusal(): Error {
  return new Error(
    "not sent: a batch-mate's handler left the claim's transaction aborted (the batch runs again)",
  );
}
