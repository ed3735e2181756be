import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DelayService } from 'nest-delay';
import { Metrics } from './metrics.js';

/**
 * The delay runtime's state and its planning of recurring schedules, read
 * at scrape time from `DelayService.stats()`:
 * memory only, synchronous, no query. Labelled with the instance id, which
 * is what names the instance in `delay_instance` and `locked_by`.
 */
@Injectable()
export class DelayGauges implements OnModuleInit {
  constructor(
    private readonly metrics: Metrics,
    private readonly delay: DelayService,
  ) {}

  onModuleInit(): void {
    const stat = (name: string, help: string, read: () => number) =>
      this.metrics.gauge(name, help, ['instance_id'], (gauge) => {
        gauge.set({ instance_id: this.delay.stats().instanceId }, read());
      });
    stat('delay_wheel_tasks', 'Tasks held in the timing wheel', () => this.delay.stats().held);
    stat(
      'delay_claim_queue_tasks',
      'Fired or overdue tasks in the claim queue, waiting for a claim transaction',
      () => this.delay.stats().queued,
    );
    stat(
      'delay_backlog_draining',
      '1 while overdue unleased tasks are being read (the backlog drain)',
      () => Number(this.delay.stats().drainingBacklog),
    );
    stat('delay_runtime_running', '1 while the delay runtime fires and claims', () =>
      Number(this.delay.stats().running),
    );
    stat(
      'delay_clock_correction_ms',
      "Added to this host's system clock to read the database's time (0 on a clock of its own)",
      () => this.delay.stats().clock?.correctionMs ?? 0,
    );
    const occurrences = (name: string, help: string, read: () => number) =>
      this.metrics.counted(name, help, ['instance_id'], (counter) => {
        counter.reset();
        counter.inc({ instance_id: this.delay.stats().instanceId }, read());
      });
    occurrences(
      'delay_schedule_occurrences_planned_total',
      'Occurrences of recurring schedules this instance turned into tasks',
      () => this.delay.stats().occurrences.planned,
    );
    occurrences(
      'delay_schedule_occurrences_missed_total',
      "Occurrences of recurring schedules this instance's planning dropped by their catch-up policy",
      () => this.delay.stats().occurrences.missed,
    );
    stat('delay_lease_live', "1 while this instance's lease is renewed and unexpired", () =>
      Number(this.delay.stats().lease.live),
    );
  }
}
