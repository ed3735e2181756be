import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';

const digitsToNumber = ({ value }: { value: unknown }) =>
  typeof value === 'string' && /^\d{1,6}$/.test(value) ? Number(value) : value;

/** `GET /admin/api/wheel?regions=`: how many regions to cut the ring into. */
export class WheelQuery {
  @ApiPropertyOptional({ minimum: 1, maximum: 3600, default: 60 })
  @IsOptional()
  @Transform(digitsToNumber)
  @IsInt()
  @Min(1)
  @Max(3600)
  regions?: number;
}
