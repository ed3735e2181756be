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
  @IsOptional()
  @IsIn(ORDER_STATUSES)
  status?: OrderStatus;

  @IsOptional()
  @IsString()
  @Length(1, 64)
  @IsStoredText()
  userId?: string;

  @IsOptional()
  @Transform(digitsToNumber)
  @IsInt()
  @Min(1)
  @Max(100)
  limit?: number;

  /** Opaque; decoded (and rejected with a 400 when it is not one of ours) by the service. */
  @IsOptional()
  @IsString()
  @Length(1, 200)
  cursor?: string;
}
