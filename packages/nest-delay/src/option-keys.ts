import { closest } from './closest-name.js';
import { UnknownOptionError } from './errors/delay-errors.js';
import type { DelayObserver } from './delay-observer.js';
import type {
  DelayModuleOptions,
  HandlerOptions,
  RetentionPolicy,
  RetryPolicy,
} from './delay.options.js';
import type { TaskLimit } from './task-limit.js';

/*
 * Every key of DelayModule's options, of forRootAsync and of a handler's
 * options, checked against the keys their types have: a misspelt option
 * stops the boot, naming it and the likely one.
 */

type Words<S extends string> = S extends `${infer Head} ${infer Rest}` ? Head | Words<Rest> : S;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/**
 * The keys of `T`, space-separated, in the order messages list them; the
 * build fails when `T` gains or loses a key and its list does not follow.
 */
function keysOf<T>() {
  return <S extends string>(list: S & (Same<Words<S>, keyof T> extends true ? unknown : never)) =>
    list.split(' ');
}

const MODULE_KEYS = keysOf<DelayModuleOptions>()(
  'tickMs slots window concurrency batchSize handlersPerClaim lease loadPageSize retry instanceId allowUnknownTypes shutdownTimeout handlerTimeout retention observer tracing preparedStatements connection ambientTransaction',
);
const RETRY_KEYS = keysOf<RetryPolicy>()('maxAttempts baseDelay maxDelay jitter');
const RETENTION_KEYS = keysOf<RetentionPolicy>()('finished dead interval');
const OBSERVER_KEYS = keysOf<DelayObserver>()(
  'onScheduled onCancelled onExecuted onFailed onDeadLettered onSnoozed onClaim',
);

/** forRoot's extras: Nest takes them out of forRoot's options, but not out of what a factory returns. */
const EXTRA_KEYS = ['isGlobal', 'dataSource'];

/** Stops the boot on a key no option has, naming it, as a bad value does; returns the options. */
export function assertKnownOptions(options: DelayModuleOptions): DelayModuleOptions {
  assertKnownKeys(options, MODULE_KEYS, 'DelayModule', '', (key) =>
    EXTRA_KEYS.includes(key)
      ? `${key} shapes the module itself: give it to forRootAsync beside useFactory, not in the options the factory returns.`
      : undefined,
  );
  assertKnownKeys(options.retry, RETRY_KEYS, 'DelayModule', 'retry.');
  assertKnownKeys(options.retention, RETENTION_KEYS, 'DelayModule', 'retention.');
  // An observer may be any object (a metrics service); only its on... names must be known.
  const observer: object = options.observer ?? {};
  const handlerNames = Object.keys(observer).filter((key) => /^on[A-Z]/.test(key));
  assertKnownKeys(
    Object.fromEntries(handlerNames.map((key) => [key, true])),
    OBSERVER_KEYS,
    'DelayModule',
    'observer.',
  );
  return options;
}

/** What forRootAsync takes: Nest's async-provider keys and the extras. */
const ASYNC_KEYS = [
  'imports',
  'inject',
  'useFactory',
  'useClass',
  'useExisting',
  'provideInjectionTokensFrom',
  ...EXTRA_KEYS,
];

/** Nest passes forRootAsync's unknown keys on as extras and ignores them; this stops there instead. */
export function assertKnownAsyncOptions(options: object): void {
  assertKnownKeys(options, ASYNC_KEYS, 'DelayModule.forRootAsync', '', (key) =>
    MODULE_KEYS.includes(key)
      ? `${key} is a module option: return it from useFactory (or the options factory class).`
      : undefined,
  );
}

const HANDLER_KEYS = keysOf<HandlerOptions>()('maxAttempts retry timeout limit');
const LIMIT_KEYS = keysOf<TaskLimit>()('concurrency rate key');
const HANDLER_RETRY_KEYS = RETRY_KEYS.filter((key) => key !== 'maxAttempts');

/** The same check for `@DelayedTaskHandler(type, options)`; `where` names the handler. */
export function assertKnownHandlerOptions(options: HandlerOptions, where: string): void {
  assertKnownKeys(options, HANDLER_KEYS, where);
  assertKnownKeys(options.limit, LIMIT_KEYS, where, 'limit.');
  assertKnownKeys(options.limit?.rate, ['starts', 'per'], where, 'limit.rate.');
  assertKnownKeys(options.retry, HANDLER_RETRY_KEYS, where, 'retry.', (key) =>
    key === 'maxAttempts' ? 'A handler sets maxAttempts beside retry, not in it.' : undefined,
  );
}

/** A misspelt option (`tickMS: 50`) would otherwise be ignored without a word. */
function assertKnownKeys(
  value: unknown,
  known: readonly string[],
  where: string,
  prefix = '',
  hint?: (key: string) => string | undefined,
): void {
  if (value === null || typeof value !== 'object') return;
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue;
    throw new UnknownOptionError(where, prefix + key, closest(key, known), known, hint?.(key));
  }
}
