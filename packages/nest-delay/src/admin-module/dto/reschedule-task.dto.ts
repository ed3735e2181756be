import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInstant } from './is-instant.decorator.js';
import { IsOptional, IsString, Length } from 'class-validator';

/** `POST /admin/api/tasks/:id/reschedule`: exactly one of runAt and delay. */
export class RescheduleTaskDto {
  @ApiPropertyOptional({ description: 'When to run it (ISO 8601 with a time zone)' })
  @IsOptional()
  @IsInstant()
  runAt?: string;

  @ApiPropertyOptional({
    description: "How long from now: '30s', '15m', '2h', '1d'",
    example: '15m',
  })
  @IsOptional()
  @IsString()
  @Length(1, 32)
  delay?: string;
}
