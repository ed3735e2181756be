/**
 * The app's TypeORM DataSource picked by the `dataSource` extra, or null:
 * no `@nestjs/typeorm` installed, or none registered.
 */
export const DELAY_DATA_SOURCE = Symbol('DELAY_DATA_SOURCE');

/** The engine's connections (store/sql.ts Database): its own pool, or the DataSource's. */
export const DELAY_DATABASE = Symbol('DELAY_DATABASE');

/** The module's options resolved once, with every default filled in. */
export const DELAY_OPTIONS = Symbol('DELAY_OPTIONS');

/** The package's OpenTelemetry side (TaskTracing), or null: tracing off, or no `@opentelemetry/api`. */
export const DELAY_TRACING = Symbol('DELAY_TRACING');

/** The engine's ObserverCalls: the admin module adds its pulse to them (not a public API). */
export const DELAY_OBSERVER_CALLS = Symbol('DELAY_OBSERVER_CALLS');
