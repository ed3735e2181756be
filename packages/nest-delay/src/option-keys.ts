import type { TaskLimit } from './task-limit.js';
import type {
  DelayModuleOptions,
  HandlerOptions,
  RetentionPolicy,
  RetryPolicy,
} from './delay-options.types.js';
import { closest } from './closest-name.js';
import { UnknownOptionError } from './errors/unknown-option.error.js';
import type { DelayObserver } from './delay-observer.js';

// The keys each options object may have; `satisfies` fails the build when an
// interface gains or loses one and its list does not follow.
const MODULE_KEYS = Object.keys({
  tickMs: 1,
  slots: 1,
  window: 1,
  concurrency: 1,
  batchSize: 1,
  handlersPerClaim: 1,
  lease: 1,
  loadPageSize: 1,
  retry: 1,
  instanceId: 1,
  allowUnknownTypes: 1,
  shutdownTimeout: 1,
  handlerTimeout: 1,
  retention: 1,
  observer: 1,
  tracing: 1,
  preparedStatements: 1,
} satisfies Record<keyof DelayModuleOptions, 1>);
const RETRY_KEYS = Object.keys({
  maxAttempts: 1,
  baseDelay: 1,
  maxDelay: 1,
  jitter: 1,
} satisfies Record<keyof RetryPolicy, 1>);
const RETENTION_KEYS = Object.keys({
  finished: 1,
  dead: 1,
  interval: 1,
} satisfies Record<keyof RetentionPolicy, 1>);
const OBSERVER_KEYS = Object.keys({
  onScheduled: 1,
  onCancelled: 1,
  onExecuted: 1,
  onFailed: 1,
  onDeadLettered: 1,
  onSnoozed: 1,
  onClaim: 1,
} satisfies Record<keyof DelayObserver, 1>);
/** forRoot's extras: Nest takes them out of forRoot's options, but not out of what a factory returns. */
const EXTRA_KEYS = ['isGlobal', 'dataSource'];

/** Stops the boot on a key no option has, naming it, as a bad value does. */
export function assertKnownOptions(options: DelayModuleOptions): void {
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

const HANDLER_KEYS = Object.keys({
  maxAttempts: 1,
  retry: 1,
  timeout: 1,
  limit: 1,
} satisfies Record<keyof HandlerOptions, 1>);
const LIMIT_KEYS = Object.keys({
  concurrency: 1,
  rate: 1,
  key: 1,
} satisfies Record<keyof TaskLimit, 1>);
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
export function assertKnownKeys(
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
