import { BadRequestException, Injectable, type PipeTransform } from '@nestjs/common';
import { bodyNotAnObject, unexpectedBodyFields } from '../admin.messages.js';

/**
 * For the actions that take no input (pause, resume, cancel, run now, retry): no body (or `{}`) is fine,
 * and any field is a 400, as an unknown field is on every other route.
 */
@Injectable()
export class NoBodyPipe implements PipeTransform<unknown, undefined> {
  transform(value: unknown): undefined {
    if (value === undefined) return undefined;
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new BadRequestException(bodyNotAnObject);
    }
    const fields = Object.keys(value);
    if (fields.length > 0) throw new BadRequestException(unexpectedBodyFields(fields));
    return undefined;
  }
}
