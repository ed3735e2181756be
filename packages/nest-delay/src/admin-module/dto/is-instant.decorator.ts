import { applyDecorators } from '@nestjs/common';
import { IsISO8601, Matches } from 'class-validator';

/**
 * An ISO 8601 date and time with its time zone (`Z` or `±hh:mm`): without
 * one, `new Date()` would read it in the server's zone, whatever the caller meant.
 */
export function IsInstant(): PropertyDecorator {
  return applyDecorators(
    IsISO8601({ strict: true, strictSeparator: true }),
    Matches(/T.*(Z|[+-]\d{2}:?\d{2})$/i, {
      message: ({ property }) =>
        `${property} must be a date and time with a time zone, such as 2026-05-01T09:30:00Z`,
    }),
  );
}
