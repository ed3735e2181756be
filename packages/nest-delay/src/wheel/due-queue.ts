import type { EntryId } from './id-index.js';
import type { DueEntry } from './timing-wheel.js';

interface Node<V> {
  entry: DueEntry<V>;
  /** Insertion order: equal due times leave in the order they came. */
  seq: number;
}

/**
 * Entries handed out by the wheel ahead of their exact due time: a min-heap by
 * (due time, arrival) with an id index, so a cancel is O(1) (dropped when it
 * surfaces). Pure, like the wheel; about one tick's worth, so plain objects.
 */
export class DueQueue<V = undefined> {
  private heap: Node<V>[] = [];
  private readonly live = new Map<EntryId, Node<V>>();
  private seq = 0;

  get size(): number {
    return this.live.size;
  }

  has(id: EntryId): boolean {
    return this.live.has(id);
  }

  get(id: EntryId): DueEntry<V> | undefined {
    return this.live.get(id)?.entry;
  }

  /** Adds the entry, replacing one with the same id. O(log n). */
  push(entry: DueEntry<V>): void {
    const node: Node<V> = { entry, seq: this.seq++ };
    this.live.set(entry.id, node);
    this.heap.push(node);
    this.up(this.heap.length - 1);
  }

  /** O(1): the node stays in the heap, cancelled, until it surfaces (or most of the heap is cancelled). */
  cancel(id: EntryId): boolean {
    if (!this.live.delete(id)) return false;
    if (this.heap.length > 64 && this.heap.length > 2 * this.live.size) this.compact();
    return true;
  }

  /** The earliest due time held, or undefined when empty. */
  peekDueAtMs(): number | undefined {
    this.dropDead();
    return this.heap[0]?.entry.dueAtMs;
  }

  /** Takes out, earliest first, the entries due at or before `nowMs` (at most `max`). */
  popDue(nowMs: number, max = Infinity): DueEntry<V>[] {
    const due: DueEntry<V>[] = [];
    while (due.length < max) {
      this.dropDead();
      const top = this.heap[0];
      if (top === undefined || top.entry.dueAtMs > nowMs) return due;
      this.removeTop();
      this.live.delete(top.entry.id);
      due.push(top.entry);
    }
    return due;
  }

  clear(): void {
    this.heap = [];
    this.live.clear();
  }

  /** Rebuilds the heap from the live nodes: O(n), paid for by the cancels that made it due. */
  private compact(): void {
    this.heap = [...this.live.values()];
    for (let i = (this.heap.length >> 1) - 1; i >= 0; i--) this.down(i);
  }

  private dropDead(): void {
    while (this.heap.length > 0 && this.live.get(this.heap[0].entry.id) !== this.heap[0]) {
      this.removeTop();
    }
  }

  private removeTop(): void {
    const last = this.heap.pop() as Node<V>;
    if (this.heap.length === 0) return;
    this.heap[0] = last;
    this.down(0);
  }

  private before(a: Node<V>, b: Node<V>): boolean {
    return (
      a.entry.dueAtMs < b.entry.dueAtMs || (a.entry.dueAtMs === b.entry.dueAtMs && a.seq < b.seq)
    );
  }

  private up(i: number): void {
    const { heap } = this;
    const node = heap[i];
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(node, heap[parent])) break;
      heap[i] = heap[parent];
      i = parent;
    }
    heap[i] = node;
  }

  private down(i: number): void {
    const { heap } = this;
    const node = heap[i];
    const n = heap.length;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && this.before(heap[right], heap[left]) ? right : left;
      if (!this.before(heap[child], node)) break;
      heap[i] = heap[child];
      i = child;
    }
    heap[i] = node;
  }
}
