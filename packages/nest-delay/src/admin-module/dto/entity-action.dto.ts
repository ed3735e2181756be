import { ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsOptional, IsString, Length } from 'class-validator';
import { IsStoredText } from './is-stored-text.decorator.js';
import { IsInstant } from './is-instant.decorator.js';

/** `POST /admin/api/entities/:entity/cancel`: optionally only some types. */
export class CancelEntityDto {
  @ApiPropertyOptional({
    type: [String],
    description: 'Only the tasks of these types; default: every type',
    example: ['order.auto-review'],
  })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @Length(1, 200, { each: true })
  @IsStoredText({ each: true })
  types?: string[];
}

/** `POST /admin/api/entities/:entity/reschedule`: exactly one of by and to. */
export class RescheduleEntityDto extends CancelEntityDto {
  @ApiPropertyOptional({
    description: "Each task later by this much from its own due time: '30s', '15m', '2h', '1d'",
    example: '2h',
  })
  @IsOptional()
  @IsString()
  @Length(1, 32)
  by?: string;

  @ApiPropertyOptional({ description: 'Every task to this time (ISO 8601 with a time zone)' })
  @IsOptional()
  @IsInstant()
  to?: string;
}
