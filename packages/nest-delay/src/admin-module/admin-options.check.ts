import type { AdminOptions, DelayAdminModuleOptions } from './admin.options.js';
import { adminOptionError } from './admin.messages.js';

/** The token's shortest length: 32 characters is 128 bits or more of anything random. */
export const MIN_TOKEN_LENGTH = 32;
export const DEFAULT_COUNT_CAP = 100_000;
const PATH = /^(\/[\w.~-]+)+$/;
const KNOWN = ['path', 'guard', 'token', 'unsafeNoAuth', 'countCap', 'entity', 'imports'];

/** The options checked and completed; throws naming the option at fault. */
export function resolveAdminOptions(options: DelayAdminModuleOptions): AdminOptions {
  const unknown = Object.keys(options).filter((key) => !KNOWN.includes(key));
  if (unknown.length > 0)
    throw new Error(adminOptionError(unknown[0], `is not an option (known: ${KNOWN.join(', ')})`));
  const path = (options.path ?? '/admin').replace(/\/+$/, '');
  if (!PATH.test(path))
    throw new Error(
      adminOptionError(
        'path',
        `must be a path such as /admin; got ${JSON.stringify(options.path)}`,
      ),
    );
  const { guard, token, unsafeNoAuth } = options;
  if (token !== undefined && (typeof token !== 'string' || token.length < MIN_TOKEN_LENGTH))
    throw new Error(
      adminOptionError(
        'token',
        `must be ${MIN_TOKEN_LENGTH} characters or more (openssl rand -hex 32 makes one)`,
      ),
    );
  if (
    guard !== undefined &&
    typeof guard !== 'function' &&
    typeof guard?.canActivate !== 'function'
  )
    throw new Error(adminOptionError('guard', 'must be a CanActivate class or instance'));
  if (unsafeNoAuth !== undefined && unsafeNoAuth !== true)
    throw new Error(adminOptionError('unsafeNoAuth', 'is true or left out'));
  if (unsafeNoAuth && (guard || token))
    throw new Error(adminOptionError('unsafeNoAuth', 'goes with neither guard nor token'));
  if (!unsafeNoAuth && !guard && !token)
    throw new Error(
      adminOptionError(
        'guard',
        'or token is needed: the admin API reads and changes every task. Pass your guard, a token, or unsafeNoAuth: true behind something that keeps others out',
      ),
    );
  const countCap = options.countCap ?? DEFAULT_COUNT_CAP;
  if (!Number.isInteger(countCap) || countCap < 1 || countCap > 10_000_000)
    throw new Error(adminOptionError('countCap', 'must be an integer from 1 to 10,000,000'));
  return {
    path,
    guard,
    token,
    countCap,
    entity: { name: options.entity?.name ?? 'Entity', prefix: options.entity?.prefix ?? '' },
  };
}
