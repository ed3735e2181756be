/**
 * The textbook alternative to a timing wheel: a binary min-heap of deadlines,
 * O(log n) add, fire and cancel (each entry knows its index, so cancel needs no
 * search). Only here to be measured against TimingWheel.
 */
export interface HeapEntry {
  id: number;
  dueAtMs: number;
  index: number;
}

export class BinaryHeap {
  private readonly items: HeapEntry[] = [];

  get size(): number {
    return this.items.length;
  }

  push(id: number, dueAtMs: number): HeapEntry {
    const entry = { id, dueAtMs, index: this.items.length };
    this.items.push(entry);
    this.up(entry.index);
    return entry;
  }

  peek(): HeapEntry | undefined {
    return this.items[0];
  }

  pop(): HeapEntry | undefined {
    const top = this.items[0];
    if (top !== undefined) this.removeAt(0);
    return top;
  }

  remove(entry: HeapEntry): boolean {
    if (this.items[entry.index] !== entry) return false;
    this.removeAt(entry.index);
    return true;
  }

  private removeAt(index: number): void {
    const last = this.items.pop()!;
    if (index === this.items.length) return; // it was the last one
    this.items[index] = last;
    last.index = index;
    this.down(index);
    this.up(last.index);
  }

  private up(i: number): void {
    const { items } = this;
    const entry = items[i];
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (items[parent].dueAtMs <= entry.dueAtMs) break;
      items[i] = items[parent];
      items[i].index = i;
      i = parent;
    }
    items[i] = entry;
    entry.index = i;
  }

  private down(i: number): void {
    const { items } = this;
    const n = items.length;
    const entry = items[i];
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && items[child + 1].dueAtMs < items[child].dueAtMs) child++;
      if (items[child].dueAtMs >= entry.dueAtMs) break;
      items[i] = items[child];
      items[i].index = i;
      i = child;
    }
    items[i] = entry;
    entry.index = i;
  }
}
