import type { Clock, TimerHandle } from '../clock/index.js';

/**
 * A round of work every `everyMs` on the runtime's clock (so a ManualClock
 * drives it in tests), never two at once: `runNow()` joins the round under
 * way or starts one. A failed round is reported and the next one runs on time.
 */
export class PeriodicRound {
  private timer: TimerHandle | undefined;
  private underWay: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly clock: Clock,
    private readonly everyMs: number,
    private readonly round: () => Promise<void>,
    private readonly onError: (error: unknown) => void,
  ) {}

  get busy(): boolean {
    return this.underWay !== undefined;
  }

  /** Arms the first timer; the caller runs whatever the service needs first itself. */
  start(): void {
    this.arm();
  }

  runNow(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.underWay ??= this.round()
      .catch((error: unknown) => this.onError(error))
      .finally(() => {
        this.underWay = undefined;
      });
    return this.underWay;
  }

  /** No timer after this resolves, and the round under way (if any) has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = undefined;
    await this.underWay;
  }

  private arm(): void {
    if (this.stopped) return;
    this.timer = this.clock.setTimer(this.clock.now() + this.everyMs, () => {
      this.timer = undefined;
      void this.runNow().finally(() => this.arm());
    });
  }
}
