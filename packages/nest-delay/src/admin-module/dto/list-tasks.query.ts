import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Length, Max, Min } from 'class-validator';
import type { TaskState } from '../../index.js';
import { TaskFilterFields } from './task-filter.fields.js';

export const TASK_STATES: TaskState[] = ['pending', 'executed', 'cancelled', 'dead'];

/** Only plain digits become a number; anything else stays a string and fails IsInt. */
const digitsToNumber = ({ value }: { value: unknown }) =>
  typeof value === 'string' && /^\d{1,6}$/.test(value) ? Number(value) : value;

/** `GET /admin/api/tasks?state=&type=&key=&keyPrefix=&entity=&dueFrom=&dueBefore=&limit=&cursor=` */
export class ListTasksQuery extends TaskFilterFields {
  @ApiPropertyOptional({ enum: TASK_STATES })
  @IsOptional()
  @IsIn(TASK_STATES)
  state?: TaskState;

  @ApiPropertyOptional({ minimum: 1, maximum: 1000, default: 50 })
  @IsOptional()
  @Transform(digitsToNumber)
  @IsInt()
  @Min(1)
  @Max(1000)
  limit?: number;

  @ApiPropertyOptional({ description: "The previous page's nextCursor (opaque)" })
  @IsOptional()
  @IsString()
  @Length(1, 100)
  cursor?: string;
}
