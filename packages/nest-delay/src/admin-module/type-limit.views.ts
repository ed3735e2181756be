import { ApiProperty } from '@nestjs/swagger';
import type { ResolvedLimit, TypeLimitInfo } from '../index.js';

// Task types and their shared limits as the admin API returns them, described for /docs.

export class RateLimitView {
  @ApiProperty({ example: 50, description: 'At most this many starts in any window of perMs' })
  starts!: number;
  @ApiProperty({ example: 1000, description: 'The window, in ms' }) perMs!: number;
}

export class LimitView {
  @ApiProperty({
    type: Number,
    nullable: true,
    example: 4,
    description: 'Handlers of the type (or of each key) running at once, on all instances together',
  })
  concurrency!: number | null;
  @ApiProperty({ type: RateLimitView, nullable: true }) rate!: RateLimitView | null;
}

export class TypeLimitView {
  @ApiProperty({ example: 'order.close-unpaid' }) type!: string;
  @ApiProperty({ description: 'Paused on every instance: none of its tasks starts until resumed' })
  paused!: boolean;
  @ApiProperty({ type: Date, nullable: true }) pausedAt!: Date | null;
  @ApiProperty({
    type: LimitView,
    nullable: true,
    description:
      'What its handlers declare in code, as the last instance to boot stored it (every instance applies that one); null: none',
  })
  declared!: LimitView | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description:
      'The instance whose declaration is stored (the last to boot); null: none stored yet',
  })
  declaredBy!: string | null;
  @ApiProperty({
    type: LimitView,
    nullable: true,
    description: 'Set at run time in place of the declared limits (PUT .../limit); null: none',
  })
  override!: LimitView | null;
  @ApiProperty({
    type: LimitView,
    nullable: true,
    description: 'In force: the override, else the declared; null: unlimited',
  })
  effective!: LimitView | null;
  @ApiProperty({ description: "The limits hold for each key of the payload (its handler's key)" })
  perKey!: boolean;
  @ApiProperty({
    description:
      'Its pending tasks already due, on every instance: waiting for the limit or the pause, or about to run',
  })
  waiting!: number;
  @ApiProperty({ description: "Of those, held in the answering instance's gate" })
  waitingHere!: number;
}

const limitView = (limit: ResolvedLimit | null): LimitView | null =>
  limit === null
    ? null
    : {
        concurrency: limit.concurrency,
        rate: limit.rate === null ? null : { starts: limit.rate.starts, perMs: limit.rate.perMs },
      };

export function toTypeLimitView(info: TypeLimitInfo): TypeLimitView {
  return {
    type: info.type,
    paused: info.paused,
    pausedAt: info.pausedAt,
    declared: limitView(info.declared),
    declaredBy: info.declaredBy?.instanceId ?? null,
    override: limitView(info.override),
    effective: limitView(info.effective),
    perKey: info.perKey,
    waiting: info.waiting,
    waitingHere: info.waitingHere,
  };
}
