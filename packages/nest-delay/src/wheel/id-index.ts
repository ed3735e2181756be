/**
 * The timing wheel's id → handle lookup: open addressing over an Int32Array at most half
 * full, keys read back from `ids[handle]` (never stored twice). Linear probing with
 * backward-shift deletion: no tombstones, so lookups stay short through any churn.
 */
export type EntryId = number | string;

/** Table cells hold `handle + 1`, so a freshly zeroed table is empty. */
const EMPTY = 0;
const MIN_TABLE_SIZE = 16;

// Reinterprets a non-int32 number's bits for hashing; module-level so hashing allocates nothing.
const float = new Float64Array(1);
const floatWords = new Int32Array(float.buffer);

/** murmur3's finaliser: sequential ids must not fill neighbouring cells into one long run. */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

function hashId(id: EntryId): number {
  if (typeof id === 'number') {
    if ((id | 0) === id) return mix(id);
    float[0] = id;
    return mix(floatWords[0] ^ mix(floatWords[1]));
  }
  let h = 0x811c9dc5; // FNV-1a
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return mix(h);
}

export class IdIndex {
  private ids: (EntryId | undefined)[];
  private table = new Int32Array(MIN_TABLE_SIZE);
  private mask = MIN_TABLE_SIZE - 1;
  private count = 0;

  constructor(handleCapacity: number) {
    this.ids = new Array<EntryId | undefined>(handleCapacity);
  }

  get size(): number {
    return this.count;
  }

  /** Follows the owner's capacity doubling so `ids` stays parallel to its typed arrays. */
  growHandles(handleCapacity: number): void {
    const ids = new Array<EntryId | undefined>(handleCapacity);
    for (let i = 0; i < this.ids.length; i++) ids[i] = this.ids[i];
    this.ids = ids;
  }

  idOf(handle: number): EntryId {
    return this.ids[handle] as EntryId;
  }

  /** The handle stored for `id`, or -1. */
  find(id: EntryId): number {
    const { table, mask, ids } = this;
    for (let pos = hashId(id) & mask; ; pos = (pos + 1) & mask) {
      const cell = table[pos];
      if (cell === EMPTY) return -1;
      if (ids[cell - 1] === id) return cell - 1;
    }
  }

  /** The caller guarantees `id` is absent (it checks with `find` first). */
  insert(id: EntryId, handle: number): void {
    if ((this.count + 1) * 2 > this.table.length) this.rehash(this.table.length * 2);
    this.ids[handle] = id;
    this.place(hashId(id), handle);
    this.count++;
  }

  remove(handle: number): void {
    const { table, mask, ids } = this;
    let hole = hashId(ids[handle] as EntryId) & mask;
    while (table[hole] !== handle + 1) hole = (hole + 1) & mask;
    // Backward shift: pull later cells of the run into the hole unless that would move
    // them before their home cell, where a lookup would never find them.
    for (let pos = (hole + 1) & mask; table[pos] !== EMPTY; pos = (pos + 1) & mask) {
      const home = hashId(ids[table[pos] - 1] as EntryId) & mask;
      if (((pos - home) & mask) >= ((pos - hole) & mask)) {
        table[hole] = table[pos];
        hole = pos;
      }
    }
    table[hole] = EMPTY;
    ids[handle] = undefined; // let a string id be collected
    this.count--;
  }

  private place(hash: number, handle: number): void {
    let pos = hash & this.mask;
    while (this.table[pos] !== EMPTY) pos = (pos + 1) & this.mask;
    this.table[pos] = handle + 1;
  }

  private rehash(size: number): void {
    const old = this.table;
    this.table = new Int32Array(size);
    this.mask = size - 1;
    for (let i = 0; i < old.length; i++) {
      const cell = old[i];
      if (cell !== EMPTY) this.place(hashId(this.ids[cell - 1] as EntryId), cell - 1);
    }
  }
}
