/**
 * The environment the public harness sets before it launches an adapter
 * (CONTRIBUTING_ADAPTERS.md, "Env in"), read once, with its defaults; a bad
 * value stops the adapter naming the variable.
 */
export interface ContractSettings {
  databaseUrl: string;
  /** Only `long_horizon` is a scenario here. */
  scenario: 'long_horizon';
  producerMode: 'fixed' | 'depth-target';
  /** `harness`: the harness writes `ENQUEUE <n>` lines on stdin; `adapter`: this process paces itself. */
  producerPacing: 'harness' | 'adapter';
  producerRate: number;
  /** Where the harness writes a new rate for its high-load phases (re-read every second). */
  rateControlFile: string | undefined;
  batchMax: number;
  batchMs: number;
  targetDepth: number;
  workers: number;
  payloadBytes: number;
  workMs: number;
  sampleEveryS: number;
  /** The replica's index: only replica 0 reports queue depth. */
  instanceId: number;
}

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min)
    throw new Error(`${name} must be an integer of at least ${min}; got ${JSON.stringify(raw)}`);
  return value;
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name] ?? fallback;
  if (!allowed.includes(raw as T))
    throw new Error(`${name} must be one of ${allowed.join(', ')}; got ${JSON.stringify(raw)}`);
  return raw as T;
}

export function readContractEnv(env: Env = process.env): ContractSettings {
  const databaseUrl = env.DATABASE_URL;
  if (!databaseUrl) throw new Error('DATABASE_URL must be set (postgres://user@host:port/db)');
  const rate = env.PRODUCER_RATE;
  if (rate !== undefined && !(Number(rate) >= 0))
    throw new Error(`PRODUCER_RATE must be a number of at least 0; got ${JSON.stringify(rate)}`);
  return {
    databaseUrl,
    scenario: oneOf(env, 'SCENARIO', ['long_horizon'], 'long_horizon'),
    producerMode: oneOf(env, 'PRODUCER_MODE', ['fixed', 'depth-target'], 'fixed'),
    producerPacing: oneOf(env, 'PRODUCER_PACING', ['harness', 'adapter'], 'adapter'),
    producerRate: rate === undefined || rate === '' ? 800 : Number(rate),
    rateControlFile: env.PRODUCER_RATE_CONTROL_FILE || undefined,
    batchMax: integer(env, 'PRODUCER_BATCH_MAX', 128, 1),
    batchMs: integer(env, 'PRODUCER_BATCH_MS', 10, 1),
    targetDepth: integer(env, 'TARGET_DEPTH', 1000, 0),
    workers: integer(env, 'WORKER_COUNT', 32, 1),
    payloadBytes: integer(env, 'JOB_PAYLOAD_BYTES', 256, 0),
    workMs: integer(env, 'JOB_WORK_MS', 1, 0),
    sampleEveryS: integer(env, 'SAMPLE_EVERY_S', 5, 1),
    instanceId: integer(env, 'BENCH_INSTANCE_ID', 0, 0),
  };
}
