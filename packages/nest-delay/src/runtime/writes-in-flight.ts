/**
 * The callers' writes on the pool under way (DelayService's schedule,
 * scheduleMany, reschedule, revive, rescheduleEntity). Each may lease its
 * tasks here, decided while this instance ran and committed a moment later.
 * A stop waits for them before it hands this instance's tasks back and
 * retires it: one committed after that would stay leased to an instance
 * that is gone, held nowhere until another instance's orphan sweep. A write
 * begun once the stop began leases nothing (WindowPolicy.leaseOnWrite).
 */
export class WritesInFlight {
  private readonly pending = new Set<Promise<unknown>>();
  /** A stop is waiting for the writes under way (tests look). */
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
