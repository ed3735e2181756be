import { inspect } from 'node:util';
import { ConfigError } from './config-error.js';

/**
 * How the orders API knows its users: bearer JWTs, verified with one key the
 * app holds (AUTH_JWT_SECRET, HS256) or an identity provider's public keys
 * (AUTH_JWKS_URL, with AUTH_ISSUER and AUTH_AUDIENCE). Outside production,
 * with neither, a development secret is made once in `.data/dev-auth-secret`
 * (`npm start` needs no configuration); AUTH_DISABLED=true turns tokens off.
 */
export type AuthConfig =
  | { mode: 'secret'; secret: Secret; issuer?: string; audience?: string }
  | { mode: 'dev-secret'; issuer?: string; audience?: string }
  | { mode: 'jwks'; jwksUrl: string; issuer: string; audience: string }
  | { mode: 'disabled' };

/** AUTH_JWT_SECRET's shortest length: 32 characters, 256 bits of HS256 key when they are random. */
export const AUTH_SECRET_MIN_LENGTH = 32;
/** Fewer distinct characters than this makes a secret guessable whatever its length. */
const AUTH_SECRET_MIN_DISTINCT = 10;

/**
 * A value that must never reach a log or an error message: printed, logged
 * as JSON or inspected, it shows as `[secret]`; `reveal()` is the only way
 * to its characters.
 */
export class Secret {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  reveal(): string {
    return this.#value;
  }

  toString(): string {
    return '[secret]';
  }

  toJSON(): string {
    return '[secret]';
  }

  [inspect.custom](): string {
    return '[secret]';
  }
}

type Env = Record<string, string | undefined>;

function read(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw.trim() === '' ? undefined : raw.trim();
}

const MISSING_IN_PRODUCTION =
  'must be set with NODE_ENV=production: AUTH_JWT_SECRET (an HS256 secret of 32+ characters) or AUTH_JWKS_URL with AUTH_ISSUER and AUTH_AUDIENCE (your identity provider); or AUTH_DISABLED=true to run the orders API without users (every caller then sees and acts on every order)';

/** Reads the AUTH_* variables; throws an ConfigError naming the one at fault, never showing a secret. */
export function loadAuthConfig(env: Env): AuthConfig {
  const secret = env.AUTH_JWT_SECRET === '' ? undefined : env.AUTH_JWT_SECRET;
  const jwksUrl = read(env, 'AUTH_JWKS_URL');
  const issuer = read(env, 'AUTH_ISSUER');
  const audience = read(env, 'AUTH_AUDIENCE');
  const disabled = authDisabled(env);
  if (disabled) {
    const set =
      secret !== undefined
        ? 'AUTH_JWT_SECRET'
        : jwksUrl !== undefined
          ? 'AUTH_JWKS_URL'
          : undefined;
    if (set !== undefined) {
      throw new ConfigError(
        'AUTH_DISABLED',
        `is true while ${set} is set: unset one of them (tokens are either checked or not)`,
      );
    }
    return { mode: 'disabled' };
  }
  if (secret !== undefined && jwksUrl !== undefined) {
    throw new ConfigError(
      'AUTH_JWT_SECRET',
      'and AUTH_JWKS_URL are both set: tokens are verified with one or the other; unset one',
    );
  }
  if (jwksUrl !== undefined) {
    return { mode: 'jwks', jwksUrl: checkJwksUrl(jwksUrl), ...jwksClaims(issuer, audience) };
  }
  const expected = { ...(issuer && { issuer }), ...(audience && { audience }) };
  if (secret !== undefined) return { mode: 'secret', secret: checkSecret(secret), ...expected };
  if (read(env, 'NODE_ENV') === 'production') {
    throw new ConfigError('AUTH_JWT_SECRET or AUTH_JWKS_URL', MISSING_IN_PRODUCTION);
  }
  return { mode: 'dev-secret', ...expected };
}

function authDisabled(env: Env): boolean {
  const raw = read(env, 'AUTH_DISABLED');
  if (raw === undefined || /^(false|0|no|off)$/i.test(raw)) return false;
  if (/^(true|1|yes|on)$/i.test(raw)) return true;
  throw new ConfigError('AUTH_DISABLED', `must be true or false; got ${JSON.stringify(raw)}`);
}

/** Used exactly as given (not trimmed): spaces are refused outright, and the value is never echoed. */
export function checkSecret(raw: string): Secret {
  return new Secret(
    checkStrongSecret('AUTH_JWT_SECRET', raw, AUTH_SECRET_MIN_LENGTH, AUTH_SECRET_MIN_DISTINCT),
  );
}

/**
 * A secret or token in `variable`, checked as one an attacker would guess:
 * `minLength` to 1000 printable ASCII characters without spaces, at least
 * `minDistinct` of them distinct (32 times `a` guesses in no time). The
 * error names the variable and the rule, never the value.
 */
export function checkStrongSecret(
  variable: string,
  raw: string,
  minLength: number,
  minDistinct: number,
): string {
  if (raw.length < minLength || raw.length > 1_000 || !/^[\x21-\x7e]+$/.test(raw)) {
    throw new ConfigError(
      variable,
      `must be ${minLength} to 1000 printable ASCII characters without spaces (try \`openssl rand -hex 32\`); got ${raw.length} character(s)`,
    );
  }
  const distinct = new Set(raw).size;
  if (distinct < minDistinct) {
    throw new ConfigError(
      variable,
      `is too weak: ${distinct} distinct character(s), at least ${minDistinct} needed (try \`openssl rand -hex 32\`)`,
    );
  }
  return raw;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** The keys that sign users' tokens travel over HTTPS; plain HTTP only to this machine (a local provider, tests). */
function checkJwksUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(
      'AUTH_JWKS_URL',
      `must be a URL such as https://idp.example.com/.well-known/jwks.json; got ${JSON.stringify(raw)}`,
    );
  }
  const local = url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
  if (url.protocol !== 'https:' && !local) {
    throw new ConfigError(
      'AUTH_JWKS_URL',
      `must be an https:// URL (http:// only to localhost); got ${url.protocol}//${url.host}`,
    );
  }
  return url.href;
}

/** With an identity provider's keys, any of its tokens would verify: issuer and audience say which are ours. */
function jwksClaims(issuer: string | undefined, audience: string | undefined) {
  for (const [name, value] of [
    ['AUTH_ISSUER', issuer],
    ['AUTH_AUDIENCE', audience],
  ] as const) {
    if (value === undefined) {
      throw new ConfigError(
        name,
        `must be set with AUTH_JWKS_URL: an identity provider signs tokens for other applications too, and only those with this ${name === 'AUTH_ISSUER' ? 'issuer (iss)' : 'audience (aud)'} are this service's`,
      );
    }
  }
  return { issuer: issuer!, audience: audience! };
}
