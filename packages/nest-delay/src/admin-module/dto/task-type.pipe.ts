import { BadRequestException, Injectable, type PipeTransform } from '@nestjs/common';
import { invalidTaskType } from '../admin.messages.js';

/**
 * `:type` must be a task type as one could be stored: 1 to 200 characters,
 * no NUL and no unpaired surrogate (Postgres text refuses the one, UTF-8
 * would silently change the other), else a 400 naming it.
 */
@Injectable()
export class TaskTypePipe implements PipeTransform<string, string> {
  transform(value: string): string {
    if (
      typeof value !== 'string' ||
      value.length < 1 ||
      value.length > 200 ||
      value.includes('\0') ||
      /\p{Cs}/u.test(value)
    ) {
      throw new BadRequestException({
        statusCode: 400,
        error: 'Bad Request',
        message: invalidTaskType(value),
        field: 'type',
      });
    }
    return value;
  }
}
