import { ApiProperty } from '@nestjs/swagger';
import type { ScheduleInfo } from '../index.js';

// Schedules as the admin API returns them, described for /docs.

export class ScheduleRuleView {
  @ApiProperty({ type: String, nullable: true, example: '0 8 * * *' }) cron!: string | null;
  @ApiProperty({ example: 'Europe/Berlin', description: 'IANA zone the cron is read in' })
  timeZone!: string;
  @ApiProperty({ type: Number, nullable: true, description: 'Interval in ms, instead of cron' })
  everyMs!: number | null;
  @ApiProperty({ enum: ['skip', 'one', 'all'], description: 'What it does about missed ones' })
  catchUp!: string;
  @ApiProperty() catchUpCap!: number;
  @ApiProperty({ enum: ['allow', 'skip'], description: 'An occurrence due while one retries' })
  overlap!: string;
}

export class LastOccurrenceView {
  @ApiProperty({ description: 'When it was due by the rule' }) at!: Date;
  @ApiProperty({ example: '42' }) taskId!: string;
  @ApiProperty({ enum: ['pending', 'executed', 'cancelled', 'dead'] }) state!: string;
  @ApiProperty({ type: String, nullable: true }) lastError!: string | null;
}

export class ScheduleView {
  @ApiProperty({ example: 'orders.purge-idempotency-keys' }) name!: string;
  @ApiProperty({ description: 'The task type each occurrence runs as' }) type!: string;
  @ApiProperty({ type: ScheduleRuleView }) rule!: ScheduleRuleView;
  @ApiProperty() paused!: boolean;
  @ApiProperty({ description: 'Declared with @RecurringTask (else added at run time)' })
  inCode!: boolean;
  @ApiProperty({
    type: Date,
    nullable: true,
    description: 'The next occurrence to come due; null while paused',
  })
  nextAt!: Date | null;
  @ApiProperty({
    type: LastOccurrenceView,
    nullable: true,
    description: 'The latest occurrence that came due, and what became of it',
  })
  lastOccurrence!: LastOccurrenceView | null;
  @ApiProperty({ description: 'Occurrences its catch-up policy dropped' }) missed!: number;
}

export function toScheduleView(info: ScheduleInfo): ScheduleView {
  return {
    name: info.name,
    type: info.type,
    rule: {
      cron: info.cron,
      timeZone: info.timeZone,
      everyMs: info.everyMs,
      catchUp: info.catchUp,
      catchUpCap: info.catchUpCap,
      overlap: info.overlap,
    },
    paused: info.paused,
    inCode: info.inCode,
    nextAt: info.upcomingAt,
    lastOccurrence: info.lastOccurrence,
    missed: info.missed,
  };
}
