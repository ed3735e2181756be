import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Length, Max, Min } from 'class-validator';
import { ORDER_STATUSES, type OrderStatus } from '../order-status.js';
import { IsStoredText } from './is-stored-text.decorator.js';

/** Only plain digits become a number; anything else stays a string and fails IsInt. */
const digitsToNumber = ({ value }: { value: unknown }) =>
  typeof value === 'string' && /^\d{1,6}$/.test(value) ? Number(value) : value;

/**
 * `GET /orders?status=&userId=&limit=&cursor=`. A parameter given empty or
 * twice is a 400, like any other value out of range.
 */
export class ListOrdersQuery {
  @ApiPropertyOptional({ enum: ORDER_STATUSES })
  @IsOptional()
  @IsIn(ORDER_STATUSES)
  status?: OrderStatus;

  @ApiPropertyOptional({ minLength: 1, maxLength: 64, example: 'user-42' })
  @IsOptional()
  @IsString()
  @Length(1, 64)
  @IsStoredText()
  userId?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 100, default: 20 })
  @IsOptional()
  @Transform(digitsToNumber)
  @IsInt()
  @Min(1)
  @Max(100)
  limit?: number;

  /** Opaque; decoded (and rejected with a 400 when it is not one of ours) by the service. */
  @ApiPropertyOptional({ description: 'The nextCursor of the previous page' })
  @IsOptional()
  @IsString()
  @Length(1, 200)
  cursor?: string;
}
