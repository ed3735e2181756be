/**
 * The callers' writes on the pool under way, which may lease tasks here. A
 * stop waits for them before it hands tasks back: one committed after would
 * stay leased to a missing instance, held nowhere. A write begun after the
 * stop began leases nothing (WindowPolicy.leaseOnWrite).
 */
export class WritesInFlight {
  private readonly pending = new Set<Promise<unknown>>();
  /** A stop is waiting for them (tests look). */
  awaited = false;

  get size(): number {
    return this.pending.size;
  }

  track<T>(write: Promise<T>): Promise<T> {
    this.pending.add(write);
    const forget = () => this.pending.delete(write);
    write.then(forget, forget);
    return write;
  }

  /** Resolves true once the writes under way now have ended, false after `timeoutMs`. */
  async settled(timeoutMs: number): Promise<boolean> {
    if (this.pending.size === 0) return true;
    this.awaited = true;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        Promise.allSettled([...this.pending]).then(() => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), timeoutMs);
          timer.unref();
        }),
      ]);
    } finally {
      clearTimeout(timer);
      this.awaited = false;
    }
  }
}
