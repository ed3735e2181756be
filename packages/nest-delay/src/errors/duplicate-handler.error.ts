import { duplicateHandler } from '../delay.messages.js';

export class DuplicateHandlerError extends Error {
  constructor(
    readonly type: string,
    first: string,
    second: string,
  ) {
    super(duplicateHandler(type, first, second));
    this.name = 'DuplicateHandlerError';
  }
}
