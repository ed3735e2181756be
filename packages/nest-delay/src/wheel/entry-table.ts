/**
 * The timing wheel's storage: an entry is a handle (an int) into parallel typed arrays (due
 * time, next/prev links chaining each slot's list in insertion order) plus arrays of values
 * and ids, so a million entries are a few flat arrays, not objects for the GC to trace.
 * Freed handles are reused; capacity doubles. The values column exists only once a value
 * other than `undefined` is stored (the runtime's wheel holds bare ids).
 */
import { IdIndex, type EntryId } from './id-index.js';

export const NIL = -1;
const INITIAL_CAPACITY = 16;

export class EntryTable<V> {
  private readonly heads: Int32Array;
  private readonly tails: Int32Array;
  private capacity = 0;
  private used = 0; // handles below this have been handed out at least once
  private freeHead = NIL;
  // Assigned by allocate(), which the constructor calls.
  private due!: Float64Array;
  private next!: Int32Array;
  private prev!: Int32Array;
  private values: (V | undefined)[] | undefined;
  private index!: IdIndex;

  constructor(lists: number) {
    this.heads = new Int32Array(lists).fill(NIL);
    this.tails = new Int32Array(lists).fill(NIL);
    this.allocate(INITIAL_CAPACITY);
  }

  get size(): number {
    return this.index.size;
  }

  /** The entry's handle, or NIL. */
  find(id: EntryId): number {
    return this.index.find(id);
  }

  idOf(handle: number): EntryId {
    return this.index.idOf(handle);
  }

  dueAtOf(handle: number): number {
    return this.due[handle];
  }

  valueOf(handle: number): V {
    return this.values?.[handle] as V;
  }

  /** The oldest entry of `list`, or NIL. */
  first(list: number): number {
    return this.heads[list];
  }

  /** The entry added after `handle` to its list, or NIL. */
  after(handle: number): number {
    return this.next[handle];
  }

  /** Adds an entry at the back of `list`; the caller has made sure `id` is absent. */
  append(list: number, id: EntryId, dueAtMs: number, value: V): void {
    const handle = this.acquire();
    this.due[handle] = dueAtMs;
    if (value !== undefined)
      (this.values ??= new Array<V | undefined>(this.capacity))[handle] = value;
    this.index.insert(id, handle);
    const tail = this.tails[list];
    this.prev[handle] = tail;
    this.next[handle] = NIL;
    if (tail === NIL) this.heads[list] = handle;
    else this.next[tail] = handle;
    this.tails[list] = handle;
  }

  /** Unlinks the entry from `list`, which must be the list it is in, and frees its handle. */
  delete(handle: number, list: number): void {
    const before = this.prev[handle];
    const after = this.next[handle];
    if (before === NIL) this.heads[list] = after;
    else this.next[before] = after;
    if (after === NIL) this.tails[list] = before;
    else this.prev[after] = before;

    this.index.remove(handle);
    if (this.values) this.values[handle] = undefined; // let the value be collected
    this.next[handle] = this.freeHead;
    this.freeHead = handle;
  }

  /** Drops every entry and gives the grown arrays back. */
  clear(): void {
    this.heads.fill(NIL);
    this.tails.fill(NIL);
    this.capacity = 0;
    this.used = 0;
    this.freeHead = NIL;
    this.values = undefined;
    this.allocate(INITIAL_CAPACITY);
  }

  private acquire(): number {
    if (this.freeHead !== NIL) {
      const handle = this.freeHead;
      this.freeHead = this.next[handle];
      return handle;
    }
    if (this.used === this.capacity) this.allocate(this.capacity * 2);
    return this.used++;
  }

  /** Grows every column to `capacity`, or starts them afresh when there are none yet. */
  private allocate(capacity: number): void {
    const due = new Float64Array(capacity);
    const next = new Int32Array(capacity);
    const prev = new Int32Array(capacity);
    if (this.capacity === 0) {
      this.index = new IdIndex(capacity);
    } else {
      due.set(this.due);
      next.set(this.next);
      prev.set(this.prev);
      if (this.values) {
        const values = new Array<V | undefined>(capacity);
        for (let i = 0; i < this.capacity; i++) values[i] = this.values[i];
        this.values = values;
      }
      this.index.growHandles(capacity);
    }
    this.due = due;
    this.next = next;
    this.prev = prev;
    this.capacity = capacity;
  }
}
