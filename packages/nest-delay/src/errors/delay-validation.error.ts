/** A `DelayService` call was given something it cannot store; nothing was written. */
export class DelayValidationError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field} ${message}`);
    this.name = 'DelayValidationError';
  }
}
