import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsOptional, IsString, Length, Max, Min } from 'class-validator';
import { IsStoredText } from './is-stored-text.decorator.js';

/** `POST /orders`. Numbers must be JSON numbers: "100" is a 400, not converted. */
export class CreateOrderDto {
  @ApiPropertyOptional({
    minLength: 1,
    maxLength: 64,
    example: 'user-42',
    description:
      "Whose order: the token's user when left out; another user's id only with the admin role (else 403); required with AUTH_DISABLED",
  })
  @IsOptional()
  @IsString()
  @Length(1, 64)
  @IsStoredText()
  userId?: string;

  @ApiProperty({
    type: 'integer',
    minimum: 1,
    maximum: 1_000_000_000,
    example: 1999,
    description: 'Amount in cents, a JSON number',
  })
  @IsInt()
  @Min(1)
  @Max(1_000_000_000)
  amountCents!: number;
}
