import { BadRequestException, Injectable, type PipeTransform } from '@nestjs/common';
import { invalidTaskId } from '../admin.messages.js';

const MAX_ID = 9223372036854775807n;

/** `:id` must be a task id as the API returns it (else a 400 naming it). */
@Injectable()
export class TaskIdPipe implements PipeTransform<string, string> {
  transform(value: string): string {
    if (!/^[1-9]\d{0,18}$/.test(value) || BigInt(value) > MAX_ID) {
      throw new BadRequestException(invalidTaskId(value));
    }
    return value;
  }
}
