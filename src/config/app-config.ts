import { tryParseDuration } from 'nest-delay';
import { checkStrongSecret, loadAuthConfig, type AuthConfig } from './auth-config.js';
import { ConfigError } from './config-error.js';

/** Every setting the service reads from its environment, validated once at start. */
export interface AppConfig {
  port: number;
  /** A Postgres server; unset means the embedded PGlite database in `pgliteDir`. */
  databaseUrl: string | undefined;
  pgliteDir: string;
  dbPoolSize: number;
  migrationsRun: boolean;
  orderPaymentTimeoutMs: number;
  orderAutoReviewDelayMs: number;
  /** How often expired Idempotency-Keys are purged; null: never (ORDER_IDEMPOTENCY_PURGE_EVERY=off). */
  orderIdempotencyPurgeEveryMs: number | null;
  /**
   * Customer notifications started per second across every instance (a
   * shared rate limit the notification's handler declares): the provider's quota.
   */
  notifyRatePerSecond: number;
  delayTickMs: number;
  delayWheelSlots: number;
  delayWindowMs: number | undefined;
  delayConcurrency: number | undefined;
  delayLeaseMs: number;
  delayMaxAttempts: number;
  delayInstanceId: string | undefined;
  /** Off behind a pooler in transaction mode that does not carry prepared statements (PgBouncer before 1.21). */
  delayPreparedStatements: boolean;
  /** How the orders API knows its users (AUTH_JWT_SECRET, AUTH_JWKS_URL, AUTH_DISABLED): see auth-config.ts. */
  auth: AuthConfig;
  /** Bearer token of the admin API; unset means the admin API is not mounted at all. */
  adminToken: string | undefined;
  /** The customer notifications' provider: only `fake` ships (NOTIFICATION_PROVIDER, required in production). */
  notificationProvider: 'fake';
  /**
   * Express's `trust proxy` (TRUST_PROXY): false (the default) takes each
   * client's address from its socket; behind a reverse proxy, the number of
   * proxies in front (`1`), `true`, or the proxies' addresses or subnets
   * (`loopback`, `10.0.0.0/8`, comma-separated) make it X-Forwarded-For's.
   */
  trustProxy: boolean | number | string;
  /** Rows the admin counts read per state at most; more shows as "cap+". */
  adminCountCap: number;
  /** Prometheus metrics at /metrics. */
  metricsEnabled: boolean;
  /** Task lifecycle and order events on the app's EventEmitter2. */
  eventsEnabled: boolean;
  logFormat: LogFormat;
  logLevel: LogLevel;
}

/**
 * The admin token's shortest length: 32 characters is 128 bits or more for
 * hex (`openssl rand -hex 32` gives 64), well past guessing at any rate the
 * throttle lets through.
 */
export const ADMIN_TOKEN_MIN_LENGTH = 32;

export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export { ConfigError };

type Env = Record<string, string | undefined>;

function read(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw.trim() === '' ? undefined : raw.trim();
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  const value = /^-?\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(
      name,
      `must be an integer from ${min} to ${max}; got ${JSON.stringify(raw)}`,
    );
  }
  return value;
}

function duration(env: Env, name: string, fallback: string, minMs = 1): number {
  const raw = read(env, name) ?? fallback;
  const ms = tryParseDuration(raw);
  if (ms === undefined || ms < minMs) {
    throw new ConfigError(
      name,
      `must be a duration of at least ${minMs} ms, such as 1500, 250ms, 30s, 30m, 48h or 2d; got ${JSON.stringify(raw)}`,
    );
  }
  return ms;
}

/**
 * Settings that were read once and are not any more. One still set stops the
 * start: ignored in silence, it would leave its operator believing in a
 * limit that no longer holds.
 */
const REMOVED: Record<string, string> = {
  ORDER_CLOSE_CONCURRENCY:
    'is no longer read: closes run without a shared limit, bounded on each instance by DELAY_CONCURRENCY (docs/orders-api.md, "Limits on the order tasks"); to hold them back on every instance for a while, PUT /admin/api/types/order.close-unpaid/limit. Unset it',
  ORDER_AUTO_REVIEW_CONCURRENCY:
    'is no longer read: auto-reviews run without a shared limit, bounded on each instance by DELAY_CONCURRENCY (docs/orders-api.md, "Limits on the order tasks"); to hold them back on every instance for a while, PUT /admin/api/types/order.auto-review/limit. Unset it',
};

function refuseRemoved(env: Env): void {
  for (const [name, message] of Object.entries(REMOVED)) {
    if (read(env, name) !== undefined) throw new ConfigError(name, message);
  }
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  if (/^(true|1|yes|on)$/i.test(raw)) return true;
  if (/^(false|0|no|off)$/i.test(raw)) return false;
  throw new ConfigError(name, `must be true or false; got ${JSON.stringify(raw)}`);
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  const value = values.find((v) => v === raw.toLowerCase());
  if (value === undefined) {
    throw new ConfigError(name, `must be one of ${values.join(', ')}; got ${JSON.stringify(raw)}`);
  }
  return value;
}

function databaseUrl(env: Env): string | undefined {
  const raw = read(env, 'DATABASE_URL');
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // Never the value itself: it holds the database's password.
    throw new ConfigError(
      'DATABASE_URL',
      `must be a URL like postgres://user:pass@host:5432/db; got ${raw.length} character(s) that do not parse as one`,
    );
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new ConfigError(
      'DATABASE_URL',
      `must start with postgres:// or postgresql://; got ${url.protocol}//`,
    );
  }
  return raw;
}

function adminToken(env: Env): string | undefined {
  // Not trimmed by read(): a token is used exactly as given, so spaces are refused outright.
  const raw = env.ADMIN_TOKEN;
  if (raw === undefined || raw === '') return undefined;
  // Its strength is what guards the admin API (failures are only slowed).
  return checkStrongSecret('ADMIN_TOKEN', raw, ADMIN_TOKEN_MIN_LENGTH, ADMIN_TOKEN_MIN_DISTINCT);
}

function trustProxy(env: Env): boolean | number | string {
  const raw = read(env, 'TRUST_PROXY');
  if (raw === undefined || /^(false|0|no|off)$/i.test(raw)) return false;
  if (/^(true|yes|on)$/i.test(raw)) return true;
  if (/^[1-9][0-9]?$/.test(raw)) return Number(raw);
  if (/^[\w.:/-]+(\s*,\s*[\w.:/-]+)*$/.test(raw)) return raw;
  throw new ConfigError(
    'TRUST_PROXY',
    `must be false, true, a number of proxies (1 to 99), or their addresses or subnets, comma-separated; got ${JSON.stringify(raw)}`,
  );
}

/** Fewer distinct characters than this makes a token guessable whatever its length. */
const ADMIN_TOKEN_MIN_DISTINCT = 10;

export function loadConfig(env: Env = process.env): AppConfig {
  refuseRemoved(env);
  const url = databaseUrl(env);
  const windowRaw = read(env, 'DELAY_WINDOW');
  const concurrencyRaw = read(env, 'DELAY_CONCURRENCY');
  return {
    port: integer(env, 'PORT', 3000, 0, 65_535),
    databaseUrl: url,
    pgliteDir: read(env, 'PGLITE_DIR') ?? './.data/pglite',
    // PGlite serves one connection at a time, so the embedded default gets a pool of one.
    dbPoolSize: integer(env, 'DB_POOL_SIZE', url ? 10 : 1, 1, 1_000),
    migrationsRun: boolean(env, 'MIGRATIONS_RUN', true),
    orderPaymentTimeoutMs: duration(env, 'ORDER_PAYMENT_TIMEOUT', '30m'),
    orderAutoReviewDelayMs: duration(env, 'ORDER_AUTO_REVIEW_DELAY', '48h'),
    orderIdempotencyPurgeEveryMs:
      read(env, 'ORDER_IDEMPOTENCY_PURGE_EVERY')?.toLowerCase() === 'off'
        ? null
        : duration(env, 'ORDER_IDEMPOTENCY_PURGE_EVERY', '10m', 1_000),
    // The engine takes 1 to 10,000 starts per window.
    notifyRatePerSecond: integer(env, 'NOTIFY_RATE_PER_SECOND', 20, 1, 10_000),
    delayTickMs: integer(env, 'DELAY_TICK_MS', 1000, 1, 3_600_000),
    delayWheelSlots: integer(env, 'DELAY_WHEEL_SLOTS', 3600, 1, 10_000_000),
    delayWindowMs: windowRaw === undefined ? undefined : duration(env, 'DELAY_WINDOW', windowRaw),
    delayConcurrency:
      concurrencyRaw === undefined ? undefined : integer(env, 'DELAY_CONCURRENCY', 1, 1, 1_000),
    delayLeaseMs: duration(env, 'DELAY_LEASE', '30s', 1_000),
    delayMaxAttempts: integer(env, 'DELAY_MAX_ATTEMPTS', 5, 1, 1_000),
    delayInstanceId: read(env, 'DELAY_INSTANCE_ID'),
    // PGlite keeps one session for every connection: a statement prepared on it is there for the next.
    delayPreparedStatements: boolean(env, 'DELAY_PREPARED_STATEMENTS', url !== undefined),
    adminToken: adminToken(env),
    trustProxy: trustProxy(env),
    adminCountCap: integer(env, 'ADMIN_COUNT_CAP', 100_000, 1, 10_000_000),
    notificationProvider: notificationProvider(env),
    auth: loadAuthConfig(env),
    ...observability(env),
  };
}

/**
 * The only provider this example ships is the fake, which sends nothing: in
 * production it must be chosen by name, so a deployment that forgot to bind
 * a real one does not silently tell no customer anything.
 */
function notificationProvider(env: Env): 'fake' {
  const raw = read(env, 'NOTIFICATION_PROVIDER');
  if (raw === undefined) {
    if (read(env, 'NODE_ENV') !== 'production') return 'fake';
    throw new ConfigError(
      'NOTIFICATION_PROVIDER',
      'must be set in production: this app ships only the fake provider, which sends nothing (set NOTIFICATION_PROVIDER=fake to run with it, or bind a real one)',
    );
  }
  return oneOf(env, 'NOTIFICATION_PROVIDER', ['fake'] as const, 'fake');
}

function observability(env: Env) {
  const eventsEnabled = boolean(env, 'EVENTS_ENABLED', true);
  const metricsEnabled = boolean(env, 'METRICS_ENABLED', true);
  const production = read(env, 'NODE_ENV') === 'production';
  return {
    metricsEnabled,
    eventsEnabled,
    // JSON lines for a log collector in production, one readable line each otherwise.
    logFormat: oneOf(env, 'LOG_FORMAT', LOG_FORMATS, production ? 'json' : 'pretty'),
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
  };
}
