import { unknownOption } from '../delay.messages.js';

/** An options object has a key the package does not know (a misspelling, most often); the boot stops. */
export class UnknownOptionError extends TypeError {
  constructor(
    /** Where the key was: `DelayModule`, `DelayModule.forRootAsync`, `@DelayedTaskHandler('type') on X.y`. */
    readonly where: string,
    /** The key as written, with its parent's path: `retry.maxAttempt`. */
    readonly option: string,
    /** The known key it is closest to, if one is close. */
    readonly suggestion: string | undefined,
    known: readonly string[],
    hint?: string,
  ) {
    super(unknownOption(where, option, suggestion, known, hint));
    this.name = 'UnknownOptionError';
  }
}
