import { ConfigError, loadConfig } from './app-config.js';

describe('loadConfig', () => {
  it('has defaults that run the service on the embedded database', () => {
    expect(loadConfig({})).toMatchObject({
      port: 3000,
      databaseUrl: undefined,
      pgliteDir: './.data/pglite',
      dbPoolSize: 1,
      migrationsRun: true,
      orderPaymentTimeoutMs: 30 * 60_000,
      orderAutoReviewDelayMs: 48 * 3_600_000,
      orderIdempotencyPurgeEveryMs: 10 * 60_000,
      delayTickMs: 1000,
      delayWheelSlots: 3600,
      delayLeaseMs: 30_000,
    });
    expect(loadConfig({ DATABASE_URL: 'postgres://u@h:5432/d' }).dbPoolSize).toBe(10);
  });

  it('prepares the claim on a server, not on the embedded PGlite (one session for every connection)', () => {
    const server = { DATABASE_URL: 'postgres://u@h:5432/d' };
    expect(loadConfig({}).delayPreparedStatements).toBe(false);
    expect(loadConfig(server).delayPreparedStatements).toBe(true);
    expect(
      loadConfig({ ...server, DELAY_PREPARED_STATEMENTS: 'false' }).delayPreparedStatements,
    ).toBe(false);
  });

  it('reads durations with units or as milliseconds', () => {
    const config = loadConfig({
      ORDER_PAYMENT_TIMEOUT: '1s',
      ORDER_AUTO_REVIEW_DELAY: '2500',
      DELAY_WINDOW: '2d',
    });
    expect(config.orderPaymentTimeoutMs).toBe(1000);
    expect(config.orderAutoReviewDelayMs).toBe(2500);
    expect(config.delayWindowMs).toBe(2 * 86_400_000);
  });

  it('purges expired Idempotency-Keys every 10 minutes, another period, or never', () => {
    expect(loadConfig({ ORDER_IDEMPOTENCY_PURGE_EVERY: '2s' }).orderIdempotencyPurgeEveryMs).toBe(
      2000,
    );
    expect(
      loadConfig({ ORDER_IDEMPOTENCY_PURGE_EVERY: 'off' }).orderIdempotencyPurgeEveryMs,
    ).toBeNull();
    expect(() => loadConfig({ ORDER_IDEMPOTENCY_PURGE_EVERY: '500ms' })).toThrow(
      'ORDER_IDEMPOTENCY_PURGE_EVERY must be a duration of at least 1000 ms',
    );
  });

  it('sends at most 20 customer notifications a second across instances, or another number', () => {
    expect(loadConfig({}).notifyRatePerSecond).toBe(20);
    expect(loadConfig({ NOTIFY_RATE_PER_SECOND: '5' }).notifyRatePerSecond).toBe(5);
    expect(() => loadConfig({ NOTIFY_RATE_PER_SECOND: '0' })).toThrow(
      'NOTIFY_RATE_PER_SECOND must be an integer from 1 to 10000; got "0"',
    );
    expect(() => loadConfig({ NOTIFY_RATE_PER_SECOND: 'off' })).toThrow(
      'NOTIFY_RATE_PER_SECOND must be an integer from 1 to 10000; got "off"',
    );
  });

  it('refuses the removed shared limits on closes and auto-reviews, saying what to use instead', () => {
    expect(loadConfig({})).not.toHaveProperty('orderCloseConcurrency');
    expect(() => loadConfig({ ORDER_CLOSE_CONCURRENCY: '4' })).toThrow(
      /^Invalid configuration: ORDER_CLOSE_CONCURRENCY is no longer read: .*DELAY_CONCURRENCY.*order\.close-unpaid\/limit/,
    );
    expect(() => loadConfig({ ORDER_AUTO_REVIEW_CONCURRENCY: 'off' })).toThrow(
      /^Invalid configuration: ORDER_AUTO_REVIEW_CONCURRENCY is no longer read: /,
    );
    // Empty is unset, as for every variable.
    expect(() => loadConfig({ ORDER_CLOSE_CONCURRENCY: '' })).not.toThrow();
  });

  it('turns metrics and events on, with JSON logs in production and readable ones elsewhere', () => {
    expect(loadConfig({})).toMatchObject({
      metricsEnabled: true,
      eventsEnabled: true,
      logFormat: 'pretty',
      logLevel: 'info',
    });
    const production = {
      NODE_ENV: 'production',
      NOTIFICATION_PROVIDER: 'fake',
      AUTH_JWT_SECRET: '0123456789abcdef'.repeat(2),
    };
    expect(loadConfig(production).logFormat).toBe('json');
    expect(loadConfig({ ...production, LOG_FORMAT: 'Pretty' }).logFormat).toBe('pretty');
    expect(loadConfig({ METRICS_ENABLED: 'off', EVENTS_ENABLED: 'off' })).toMatchObject({
      metricsEnabled: false,
      eventsEnabled: false,
    });
  });

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['DATABASE_URL', 'mysql://root@localhost/db'],
    ['DATABASE_URL', 'not a url'],
    ['ORDER_PAYMENT_TIMEOUT', '30 minutes'],
    ['ORDER_PAYMENT_TIMEOUT', '-5m'],
    ['ORDER_AUTO_REVIEW_DELAY', '0'],
    ['DELAY_TICK_MS', '1.5'],
    ['DELAY_WHEEL_SLOTS', '0'],
    ['DELAY_LEASE', '10ms'],
    ['MIGRATIONS_RUN', 'maybe'],
    ['DB_POOL_SIZE', '0'],
    ['ADMIN_TOKEN', 'short'],
    ['ADMIN_TOKEN', `${'a'.repeat(32)} with spaces`],
    ['ADMIN_TOKEN', 'a'.repeat(32)],
    ['ADMIN_TOKEN', 'ab12'.repeat(16)],
    ['ADMIN_COUNT_CAP', '0'],
    ['NOTIFY_RATE_PER_SECOND', '10001'],
    ['NOTIFY_RATE_PER_SECOND', '2.5'],
    ['METRICS_ENABLED', 'sometimes'],
    ['EVENTS_ENABLED', '2'],
    ['LOG_FORMAT', 'xml'],
    ['LOG_LEVEL', 'loud'],
  ])('rejects %s=%s with an error naming the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(
      new RegExp(`^Invalid configuration: ${name} `),
    );
  });

  it('refuses to start in production with the fake notification provider unless it is chosen by name', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(
      /^Invalid configuration: NOTIFICATION_PROVIDER must be set in production/,
    );
    expect(
      loadConfig({ NODE_ENV: 'production', NOTIFICATION_PROVIDER: 'fake', AUTH_DISABLED: 'true' })
        .notificationProvider,
    ).toBe('fake');
    expect(loadConfig({}).notificationProvider).toBe('fake');
    expect(() => loadConfig({ NOTIFICATION_PROVIDER: 'smtp' })).toThrow(/NOTIFICATION_PROVIDER/);
  });

  it('never prints a malformed DATABASE_URL, which holds the password', () => {
    const url = 'postgres://app:s3cr3t-pass@db host:5432/orders';
    expect(() => loadConfig({ DATABASE_URL: url })).toThrow(
      /^Invalid configuration: DATABASE_URL /,
    );
    expect(() => loadConfig({ DATABASE_URL: url })).not.toThrow(/s3cr3t/);
  });

  it('leaves the admin API off without ADMIN_TOKEN, and never echoes a rejected token', () => {
    expect(loadConfig({}).adminToken).toBeUndefined();
    const token = '0123456789abcdef'.repeat(4);
    expect(loadConfig({ ADMIN_TOKEN: token }).adminToken).toBe(token);
    const secret = 'too-short-secret';
    expect(() => loadConfig({ ADMIN_TOKEN: secret })).toThrow(/got 16 character\(s\)$/);
    // Long enough but guessable: refused, naming why, not the token.
    const weak = 'a'.repeat(40);
    expect(() => loadConfig({ ADMIN_TOKEN: weak })).toThrow(/too weak: 1 distinct character/);
    expect(() => loadConfig({ ADMIN_TOKEN: weak })).not.toThrow(new RegExp(weak));
  });
});
