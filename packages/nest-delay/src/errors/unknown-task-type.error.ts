import { closest } from '../closest-name.js';
import { unknownType } from '../delay.messages.js';

export class UnknownTaskTypeError extends Error {
  constructor(
    readonly type: string,
    known: string[],
  ) {
    super(unknownType(type, known, closest(type, known)));
    this.name = 'UnknownTaskTypeError';
  }
}
