import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import type { DelayedTask, InstanceInfo, TaskCounts, WheelSnapshot } from '../index.js';

// What the admin API returns, described for /docs. Dates go out as ISO 8601 strings.

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export class TaskView {
  @ApiProperty({ example: '42' }) id!: string;
  @ApiProperty({ example: 'order.close-unpaid' }) type!: string;
  @ApiProperty({ type: String, nullable: true }) key!: string | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'The business object it belongs to',
    example: 'order:42',
  })
  entity!: string | null;
  @ApiProperty({ description: 'JSON', nullable: true }) payload!: unknown;
  @ApiProperty() dueAt!: Date;
  @ApiProperty({ enum: ['pending', 'executed', 'cancelled', 'dead'] }) state!: string;
  @ApiProperty({ type: Date, nullable: true }) executedAt!: Date | null;
  @ApiProperty({ type: Date, nullable: true }) cancelledAt!: Date | null;
  @ApiProperty({ type: Date, nullable: true }) deadAt!: Date | null;
  @ApiProperty() attempts!: number;
  @ApiProperty() maxAttempts!: number;
  @ApiProperty({ type: String, nullable: true }) lastError!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Instance whose lease holds it' })
  lockedBy!: string | null;
  @ApiProperty() createdAt!: Date;
  @ApiProperty() updatedAt!: Date;
}

export class TaskPageView {
  @ApiProperty({ type: [TaskView] }) items!: DelayedTask[];
  @ApiProperty({ type: String, nullable: true, description: 'Pass as cursor for the next page' })
  nextCursor!: string | null;
}

export class InstanceView {
  @ApiProperty() id!: string;
  @ApiProperty() startedAt!: Date;
  @ApiProperty() heartbeatAt!: Date;
  @ApiProperty() leaseUntil!: Date;
  @ApiProperty({ description: "Lease still runs by the answering instance's clock" })
  live!: boolean;
  @ApiProperty({ description: 'The instance that answered' }) self!: boolean;
  @ApiProperty({ description: 'Pending tasks leased to it' }) held!: number;
  @ApiProperty({ description: 'held is a lower bound (the count cap)' }) heldCapped!: boolean;
  @ApiProperty({
    type: Number,
    nullable: true,
    description:
      "The clock it runs on minus the database's at its last heartbeat, in ms: within a round trip when its system clock is corrected",
  })
  clockOffsetMs!: number | null;
  @ApiProperty({
    type: Number,
    nullable: true,
    description:
      "Its host's system clock minus the database's, in ms, as its heartbeats measure it: what the engine corrects. Null on a clock of its own (tests)",
  })
  systemClockOffsetMs!: number | null;
}

export class TaskDetailsView {
  @ApiProperty({ type: TaskView }) task!: DelayedTask;
  @ApiProperty({ type: InstanceView, nullable: true }) holder!: InstanceInfo | null;
  @ApiProperty({ description: "In the answering instance's wheel" }) inThisWheel!: boolean;
}

export class StateCountView {
  @ApiProperty() count!: number;
  @ApiProperty({ description: 'count is the cap: there are at least that many' }) capped!: boolean;
  @ApiProperty({ example: '100,000+' }) label!: string;
}

export class CountsView {
  @ApiProperty() computedAt!: Date;
  @ApiProperty({ description: 'Rows read per state at most' }) cap!: number;
  @ApiProperty({
    type: 'object',
    additionalProperties: { $ref: '#/components/schemas/StateCountView' },
    example: { pending: { count: 3, capped: false, label: '3' } },
  })
  states!: Record<string, StateCountView>;
  @ApiProperty({
    description:
      'Per type and state, among the rows read (cap + 1 per state at most): exact where the state is not capped',
    example: [{ type: 'order.close-unpaid', pending: 3, executed: 10, cancelled: 1, dead: 0 }],
  })
  types!: Array<Record<string, string | number>>;
}

export function toCountsView(counts: TaskCounts): CountsView {
  const states: Record<string, StateCountView> = {};
  for (const [state, { count, capped }] of Object.entries(counts.states)) {
    states[state] = {
      count,
      capped,
      label: `${count.toLocaleString('en-US')}${capped ? '+' : ''}`,
    };
  }
  return { computedAt: counts.computedAt, cap: counts.cap, states, types: counts.types };
}

export class RetryDeadView {
  @ApiProperty({ type: [String] }) retried!: string[];
  @ApiProperty({ description: 'Matched but no longer dead when their turn came' }) skipped!: number;
  @ApiProperty({ description: 'More dead tasks match: call again' }) more!: boolean;
}

export class WheelRegionView {
  @ApiProperty() fromSlot!: number;
  @ApiProperty() toSlot!: number;
  @ApiProperty({ description: 'Entries in these slots, any revolution' }) entries!: number;
  @ApiProperty({ description: "Of those, due on the pointer's next pass" }) thisRevolution!: number;
  @ApiProperty({ description: 'The next pass over the region starts' }) passFrom!: string;
  @ApiProperty({ description: 'and ends' }) passTo!: string;
  @ApiPropertyOptional({ type: String, nullable: true }) earliestDueAt!: string | null;
  @ApiPropertyOptional({ type: String, nullable: true }) latestDueAt!: string | null;
}

export class WheelView {
  @ApiProperty() instanceId!: string;
  @ApiProperty() now!: string;
  @ApiProperty() windowMs!: number;
  @ApiProperty() slots!: number;
  @ApiProperty() tickMs!: number;
  @ApiProperty({ description: 'Last tick processed' }) currentTick!: number;
  @ApiProperty({ description: 'Slot of the last tick processed' }) pointerSlot!: number;
  @ApiProperty({ description: 'Tasks held' }) size!: number;
  @ApiProperty({ description: 'Held already due, firing at the next tick' }) overdue!: number;
  @ApiProperty({ type: [WheelRegionView] }) regions!: WheelRegionView[];
}

export function toWheelView(snapshot: WheelSnapshot): WheelView {
  const { nowMs, regions, ...rest } = snapshot;
  return {
    ...rest,
    now: new Date(nowMs).toISOString(),
    regions: regions.map(({ passFromMs, passToMs, earliestDueAtMs, latestDueAtMs, ...region }) => ({
      ...region,
      passFrom: new Date(passFromMs).toISOString(),
      passTo: new Date(passToMs).toISOString(),
      earliestDueAt: iso(earliestDueAtMs),
      latestDueAt: iso(latestDueAtMs),
    })),
  };
}

export class EntityActionView {
  @ApiProperty({ example: 'order:42' }) entity!: string;
  @ApiProperty({ type: [String], description: 'The tasks changed, in id order' }) ids!: string[];
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'number' },
    description: 'How many tasks changed, per type',
    example: { 'order.auto-review': 1 },
  })
  byType!: Record<string, number>;
  @ApiProperty({
    type: [TaskView],
    description:
      'The tasks as changed. A task that was running is waited for, and listed only if its attempt left it pending',
  })
  tasks!: DelayedTask[];
}

export class TimelineEntryView {
  @ApiProperty() at!: Date;
  @ApiProperty({ example: '42' }) taskId!: string;
  @ApiProperty({ example: 'order.close-unpaid' }) type!: string;
  @ApiProperty({ type: String, nullable: true }) key!: string | null;
  @ApiProperty({
    enum: [
      'scheduled',
      'replaced',
      'debounced',
      'started',
      'retried',
      'snoozed',
      'dead',
      'charged',
      'cancelled',
      'rescheduled',
      'revived',
      'executed',
    ],
  })
  event!: string;
  @ApiProperty({ type: Number, nullable: true }) attempt!: number | null;
  @ApiProperty({ type: String, nullable: true, description: 'The instance that ran the attempt' })
  instance!: string | null;
  @ApiProperty({ type: Number, nullable: true, description: 'From the claim to the fate' })
  durationMs!: number | null;
  @ApiProperty({ type: Date, nullable: true }) dueAt!: Date | null;
  @ApiProperty({ type: String, nullable: true, description: 'Error or reason' })
  detail!: string | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'W3C trace id of the scheduling request',
  })
  traceId!: string | null;
}

export class TimelineDueView {
  @ApiProperty() taskId!: string;
  @ApiProperty() type!: string;
  @ApiProperty({ type: String, nullable: true }) key!: string | null;
  @ApiProperty() dueAt!: Date;
}

export class TimelineView {
  @ApiProperty({ example: 'order:42' }) entity!: string;
  @ApiProperty({ type: [TimelineEntryView], description: 'What happened, in time order' })
  entries!: TimelineEntryView[];
  @ApiProperty({ type: [TimelineDueView], description: 'What is still due, by due time' })
  due!: TimelineDueView[];
  @ApiProperty({ type: [TaskView] }) tasks!: DelayedTask[];
  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'Finished tasks and their history are pruned this long after they finished',
  })
  finishedForgottenAfterMs!: number | null;
  @ApiProperty({ type: Number, nullable: true }) deadForgottenAfterMs!: number | null;
}
