import { ValidateBy, buildMessage, type ValidationOptions } from 'class-validator';

const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Text Postgres keeps as it was sent: no NUL character (text columns reject
 * it, which would be a 500) and no unpaired surrogate (the UTF-8 encoder would
 * silently replace it).
 */
export function IsStoredText(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isStoredText',
      validator: {
        validate: (value: unknown) =>
          typeof value !== 'string' || (!value.includes('\0') && !LONE_SURROGATE.test(value)),
        defaultMessage: buildMessage(
          (each) => `${each}$property must not contain NUL characters or unpaired surrogates`,
          options,
        ),
      },
    },
    options,
  );
}
