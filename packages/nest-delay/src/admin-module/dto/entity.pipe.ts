import { BadRequestException, Injectable, type PipeTransform } from '@nestjs/common';
import { invalidEntity } from '../admin.messages.js';

/**
 * `:entity` must be an entity as one could be stored: 1 to 500 characters,
 * no NUL and no unpaired surrogate, else a 400 naming it.
 */
@Injectable()
export class EntityPipe implements PipeTransform<string, string> {
  transform(value: string): string {
    if (
      typeof value !== 'string' ||
      value.length < 1 ||
      value.length > 500 ||
      value.includes('\0') ||
      /\p{Cs}/u.test(value)
    ) {
      throw new BadRequestException({
        statusCode: 400,
        error: 'Bad Request',
        message: invalidEntity(value),
        field: 'entity',
      });
    }
    return value;
  }
}
