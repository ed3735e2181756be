import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInstant } from './is-instant.decorator.js';
import { IsOptional, IsString, Length } from 'class-validator';
import type { TaskListFilter } from '../../index.js';
import { IsStoredText } from './is-stored-text.decorator.js';

/** The filter fields shared by the listing (query) and the bulk retry (body). */
export class TaskFilterFields {
  @ApiPropertyOptional({ description: 'Handler type, exactly', example: 'order.close-unpaid' })
  @IsOptional()
  @IsString()
  @Length(1, 200)
  @IsStoredText()
  type?: string;

  @ApiPropertyOptional({ description: 'Business key, exactly' })
  @IsOptional()
  @IsString()
  @Length(1, 500)
  @IsStoredText()
  key?: string;

  @ApiPropertyOptional({ description: 'Business keys starting with this', example: 'order:' })
  @IsOptional()
  @IsString()
  @Length(1, 500)
  @IsStoredText()
  keyPrefix?: string;

  @ApiPropertyOptional({
    description: 'The entity the tasks belong to, exactly',
    example: 'order:42',
  })
  @IsOptional()
  @IsString()
  @Length(1, 500)
  @IsStoredText()
  entity?: string;

  @ApiPropertyOptional({ description: 'Due at or after (ISO 8601 with a time zone)' })
  @IsOptional()
  @IsInstant()
  dueFrom?: string;

  @ApiPropertyOptional({ description: 'Due before (ISO 8601 with a time zone)' })
  @IsOptional()
  @IsInstant()
  dueBefore?: string;
}

/** The package's filter from validated fields. */
export function toTaskFilter(fields: TaskFilterFields): Omit<TaskListFilter, 'state'> {
  return {
    type: fields.type,
    key: fields.key,
    keyPrefix: fields.keyPrefix,
    entity: fields.entity,
    dueFrom: fields.dueFrom === undefined ? undefined : new Date(fields.dueFrom),
    dueBefore: fields.dueBefore === undefined ? undefined : new Date(fields.dueBefore),
  };
}
