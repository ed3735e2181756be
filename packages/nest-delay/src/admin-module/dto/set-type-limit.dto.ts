import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsObject, IsOptional, ValidateBy, ValidateNested } from 'class-validator';
import { tryParseDuration } from '../../duration.js';

/** A duration as the engine reads one: ms as a number, or '500ms', '1s', '1m'. */
function IsDuration(): PropertyDecorator {
  return ValidateBy({
    name: 'isDuration',
    validator: {
      validate: (value: unknown) =>
        (typeof value === 'number' || (typeof value === 'string' && value.length <= 32)) &&
        tryParseDuration(value) !== undefined,
      defaultMessage: (args) =>
        `$property must be a duration such as '1s', '500ms' or '1m', or a number of ms; got ${JSON.stringify(args?.value) ?? 'nothing'}`,
    },
  });
}

/** `rate`: at most `starts` starts in any window of `per`. */
export class RateLimitDto {
  @ApiPropertyOptional({ example: 50, description: 'Starts allowed per window (1 to 10,000)' })
  @IsInt()
  starts!: number;

  @ApiPropertyOptional({
    example: '1s',
    description: "The window: '1s', '500ms', '1m', or ms as a number (1 ms to 24 h)",
    oneOf: [{ type: 'string' }, { type: 'number' }],
  })
  @IsDuration()
  per!: string | number;
}

/**
 * `PUT /admin/api/types/:type/limit`: limits in place of the declared ones,
 * on every instance. A field given replaces the one in force, null removes
 * that limit, a field left out stays as it is; at least one is needed.
 */
export class SetTypeLimitDto {
  @ApiPropertyOptional({
    type: Number,
    nullable: true,
    example: 2,
    description:
      'Handlers running at once across all instances (1 to 100,000); null: no concurrency limit. To stop it, pause the type',
  })
  @IsOptional()
  @IsInt()
  concurrency?: number | null;

  @ApiPropertyOptional({
    type: RateLimitDto,
    nullable: true,
    description: 'Starts per window across all instances; null: no rate limit',
  })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => RateLimitDto)
  rate?: RateLimitDto | null;
}
