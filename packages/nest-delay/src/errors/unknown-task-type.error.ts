import { unknownType } from '../delay.messages.js';

export class UnknownTaskTypeError extends Error {
  constructor(
    readonly type: string,
    known: string[],
  ) {
    super(unknownType(type, known));
    this.name = 'UnknownTaskTypeError';
  }
}
