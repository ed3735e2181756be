import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnModuleInit,
} from '@nestjs/common';
import {
  CLOCK,
  DelayLimits,
  DelayService,
  type Clock,
  type TimerHandle,
  type TypeLimitInfo,
} from 'nest-delay';
import { Metrics } from './metrics.js';

/** Between two reads of the task types' limits and waiting counts, by the app's clock. */
export const LIMIT_GAUGES_EVERY_MS = 15_000;

/**
 * Shared limits as gauges: per type, its tasks due and waiting behind a
 * limit or a pause (cluster-wide), those of them held by this instance, and
 * whether it is paused. They come from `DelayLimits.list()`, which reads the
 * database (the limits table, a few rows, and a count of due pending tasks
 * by type), so a scrape does not call it: it is read at start and then every
 * LIMIT_GAUGES_EVERY_MS on the app's clock (a test's ManualClock drives it),
 * never two at once, and a scrape serves the last read from memory, as every
 * other metric. A read that fails drops the figures (absent rather than
 * stale) until the next one succeeds.
 */
@Injectable()
export class LimitGauges
  implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown
{
  private readonly logger = new Logger('LimitGauges');
  private last: TypeLimitInfo[] | undefined;
  private failing = false;
  private timer: TimerHandle | undefined;
  /** The read under way: never two at once, and a read asked for meanwhile joins it. */
  private reading: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly metrics: Metrics,
    private readonly limits: DelayLimits,
    private readonly delay: DelayService,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  onModuleInit(): void {
    // Limited or paused types only: for any other, "due and not yet run" is not a wait behind a limit.
    const behindLimits = () =>
      (this.last ?? []).filter((info) => info.paused || info.effective !== null);
    this.metrics.gauge(
      'delay_limit_waiting_tasks',
      'Tasks of a limited or paused type already due and not yet run, on every instance (the same figure on each: take max, not sum); read every 15 s',
      ['type'],
      (gauge) => {
        gauge.reset();
        for (const info of behindLimits()) gauge.set({ type: info.type }, info.waiting);
      },
    );
    this.metrics.gauge(
      'delay_limit_waiting_here_tasks',
      "Of those, held in this instance's limit gate until their limit lets them start; read every 15 s",
      ['type', 'instance_id'],
      (gauge) => {
        gauge.reset();
        const instanceId = this.delay.stats().instanceId;
        for (const info of behindLimits())
          gauge.set({ type: info.type, instance_id: instanceId }, info.waitingHere);
      },
    );
    this.metrics.gauge(
      'delay_type_paused',
      '1 while the task type is paused on every instance; read every 15 s',
      ['type'],
      (gauge) => {
        gauge.reset();
        for (const info of this.last ?? []) gauge.set({ type: info.type }, Number(info.paused));
      },
    );
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.read();
    this.arm();
  }

  /** Reads now (joining a read under way); the tests call it rather than wait for the timer. */
  read(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.reading ??= this.readOnce()
      .catch((error: unknown) => this.failed(error))
      .finally(() => {
        this.reading = undefined;
      });
    return this.reading;
  }

  /** No timer after this resolves, and the read under way (if any) has ended. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    await this.reading;
  }

  /** The next read, LIMIT_GAUGES_EVERY_MS after the last one ended, on the app's clock (a test's ManualClock drives it). */
  private arm(): void {
    if (this.stopped) return;
    this.timer = this.clock.setTimer(this.clock.now() + LIMIT_GAUGES_EVERY_MS, () => {
      void this.read().finally(() => this.arm());
    });
  }

  private async readOnce(): Promise<void> {
    this.last = await this.limits.list();
    if (this.failing) this.logger.log('Reading the task types for the limit gauges works again');
    this.failing = false;
  }

  private failed(error: unknown): void {
    this.last = undefined;
    if (!this.failing)
      this.logger.warn(
        `Reading the task types for the limit gauges failed; they are left out until a read works: ${error instanceof Error ? error.message : String(error)}`,
      );
    this.failing = true;
  }
}
