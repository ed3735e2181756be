import {
  Inject,
  Query,
  Sse,
  type BeforeApplicationShutdown,
  type MessageEvent,
} from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces } from '@nestjs/swagger';
import { CLOCK, DelayAdmin, DelaySchedules, type Clock, type TimerHandle } from '../index.js';
import { Observable, type Subscriber } from 'rxjs';
import { AdminApiController } from './admin-api.decorator.js';
import { AdminPulse } from './admin-pulse.js';
import { ADMIN_OPTIONS, type AdminOptions } from './admin.options.js';
import { toCountsView, toWheelView } from './admin.views.js';
import { toScheduleView } from './schedule.views.js';
import { TypeLimitsReader } from './type-limits.reader.js';
import { WheelQuery } from './dto/wheel.query.js';

/** Between two snapshots of the stream, by the app's clock. */
export const STREAM_EVERY_MS = 2_000;

/**
 * `GET /admin/api/stream`: Server-Sent Events, a `snapshot` at once and then
 * every STREAM_EVERY_MS: counts (the shared, capped ones: a thousand open
 * pages still count once per 5 s), the instances, the schedules, the task
 * types with their limits (one read shared for 2 s: TypeLimitsReader), this
 * instance's wheel and its pulse (outcomes per second and lateness, from memory).
 * The next snapshot is timed when one is sent, so a slow database makes the
 * stream slower instead of piling queries up; a failed snapshot is an `error`
 * event and the stream goes on. Open streams end when the app shuts down:
 * the HTTP server waits for every open connection before it closes.
 */
@AdminApiController('api')
export class AdminStreamController implements BeforeApplicationShutdown {
  private readonly open = new Set<Subscriber<MessageEvent>>();

  constructor(
    private readonly admin: DelayAdmin,
    private readonly schedules: DelaySchedules,
    private readonly types: TypeLimitsReader,
    @Inject(ADMIN_OPTIONS) private readonly options: AdminOptions,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly pulse: AdminPulse,
  ) {}

  @Sse('stream')
  @ApiOperation({
    summary: `Live snapshots (counts, instances, schedules, task types, wheel, pulse) as Server-Sent Events, every ${STREAM_EVERY_MS} ms`,
  })
  @ApiProduces('text/event-stream')
  @ApiOkResponse({
    description:
      "event: snapshot, data: { counts, instances, schedules, types, wheel, pulse } (types: as GET /admin/api/types, one read shared by every open stream for 2 s; pulse: this instance's executed, failed and dead-lettered per second over the last 5 minutes, executed tasks' lateness, and per type their waits behind its limit)",
  })
  stream(@Query() query: WheelQuery): Observable<MessageEvent> {
    // Checked now, so a bad `regions` is a 400 rather than an error event.
    this.admin.wheel(query.regions);
    return new Observable<MessageEvent>((subscriber) => {
      let timer: TimerHandle | undefined;
      let open = true;
      this.open.add(subscriber);
      const send = async () => {
        try {
          const data = await this.snapshot(query.regions);
          if (open) subscriber.next({ type: 'snapshot', data });
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          if (open) subscriber.next({ type: 'error', data: { message } });
        }
        if (open)
          timer = this.clock.setTimer(this.clock.now() + STREAM_EVERY_MS, () => void send());
      };
      void send();
      return () => {
        open = false;
        timer?.cancel();
        this.open.delete(subscriber);
      };
    });
  }

  beforeApplicationShutdown(): void {
    for (const subscriber of [...this.open]) subscriber.complete();
  }

  private async snapshot(regions: number | undefined) {
    const [counts, instances, schedules, types] = await Promise.all([
      this.admin.counts({ cap: this.options.countCap }),
      this.admin.instances(this.options.countCap),
      this.schedules.list(),
      this.types.read(),
    ]);
    return {
      counts: toCountsView(counts),
      instances,
      schedules: schedules.map(toScheduleView),
      types,
      wheel: toWheelView(this.admin.wheel(regions)),
      pulse: this.pulse.view(this.clock.now()),
    };
  }
}
