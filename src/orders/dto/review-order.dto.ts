import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsString, Max, MaxLength, Min, ValidateIf } from 'class-validator';
import { IsStoredText } from './is-stored-text.decorator.js';

/** `POST /orders/:id/review`. */
export class ReviewOrderDto {
  @ApiProperty({ type: 'integer', minimum: 1, maximum: 5, example: 4 })
  @IsInt()
  @Min(1)
  @Max(5)
  stars!: number;

  // Optional means absent: null is not a string (IsOptional would let it through).
  @ApiPropertyOptional({ maxLength: 1000, example: 'Arrived quickly' })
  @ValidateIf((dto: ReviewOrderDto) => dto.comment !== undefined)
  @IsString()
  @MaxLength(1000)
  @IsStoredText()
  comment?: string;
}
