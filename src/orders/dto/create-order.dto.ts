import { IsInt, IsString, Length, Max, Min } from 'class-validator';
import { IsStoredText } from './is-stored-text.decorator.js';

/** `POST /orders`. Numbers must be JSON numbers: "100" is a 400, not converted. */
export class CreateOrderDto {
  @IsString()
  @Length(1, 64)
  @IsStoredText()
  userId!: string;

  @IsInt()
  @Min(1)
  @Max(1_000_000_000)
  amountCents!: number;
}
