import { ApiProperty } from '@nestjs/swagger';
import { IsInt, Max, Min } from 'class-validator';
import { TaskFilterFields } from './task-filter.fields.js';

/** `POST /admin/api/tasks/retry-dead`: the dead-lettered tasks matching the filter, at most `limit`. */
export class RetryDeadDto extends TaskFilterFields {
  @ApiProperty({
    minimum: 1,
    maximum: 1000,
    description: 'Retry at most this many (oldest due first)',
  })
  @IsInt()
  @Min(1)
  @Max(1000)
  limit!: number;
}
