import { IsInt, IsString, Max, MaxLength, Min, ValidateIf } from 'class-validator';
import { IsStoredText } from './is-stored-text.decorator.js';

/** `POST /orders/:id/review`. */
export class ReviewOrderDto {
  @IsInt()
  @Min(1)
  @Max(5)
  stars!: number;

  // Optional means absent: null is not a string (IsOptional would let it through).
  @ValidateIf((dto: ReviewOrderDto) => dto.comment !== undefined)
  @IsString()
  @MaxLength(1000)
  @IsStoredText()
  comment?: string;
}
