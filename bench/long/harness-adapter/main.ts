/**
 * nest-delay as an adapter of the public long-horizon harness
 * (hardbyte/postgresql-job-queue-benchmarking): one process that reads the
 * harness's environment, boots the engine, offers load, and writes the
 * descriptor then a sample of each metric every SAMPLE_EVERY_S as JSON lines
 * on stdout; logs go to stderr. SIGTERM: stop, and exit 0 within 5 s.
 * How to run it: README.md beside this file.
 */
import { Producer } from '../producer.js';
import { createAdapterEngine } from './adapter-engine.js';
import { AdapterQueries } from './adapter-queries.js';
import { readContractEnv } from './contract-env.js';
import { describeAdapter } from './descriptor.js';
import { DepthWatch } from './depth-watch.js';
import { HarnessTokens } from './harness-tokens.js';
import { writeStdout } from './jsonl.js';
import { startOfferedLoad } from './offered-load.js';
import { RollingLatency } from './rolling-latency.js';
import { Sampler } from './sampler.js';

/** The harness's limit is 5 s; anything still open after this is cut. */
const SHUTDOWN_DEADLINE_MS = 4500;
/** How often queue depth is read when it is only reported. */
const DEPTH_EVERY_MS = 1000;

// stdout carries telemetry only: anything a library logs goes to stderr.
console.log = console.info = console.debug = console.warn = console.error;
// A connection lost while Postgres restarts must not end the run: the engine retries.
process.on('unhandledRejection', (error) => console.error(`unhandled: ${String(error)}`));
// Listened for from the start: a SIGTERM during boot ends the run once boot is done.
const stopRequested = new Promise<void>((resolve) => {
  const stop = () => {
    setTimeout(() => {
      console.error(
        `nest-delay adapter: shutdown not done after ${SHUTDOWN_DEADLINE_MS} ms, exiting`,
      );
      process.exit(0);
    }, SHUTDOWN_DEADLINE_MS).unref();
    resolve();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
});

async function main(): Promise<void> {
  const startedAt = new Date();
  const settings = readContractEnv();
  const tokens =
    settings.producerMode === 'fixed' && settings.producerPacing === 'harness'
      ? new HarnessTokens(process.stdin)
      : undefined;
  const latency = new RollingLatency(30);
  let completed = 0;
  const engine = createAdapterEngine(
    {
      url: settings.databaseUrl,
      workers: settings.workers,
      workMs: settings.workMs,
      payloadBytes: settings.payloadBytes,
    },
    { pickedUp: (ms, at) => latency.record(ms, at), completed: () => (completed += 1) },
  );
  await engine.start();
  const queries = new AdapterQueries(settings.databaseUrl);
  writeStdout(await describeAdapter(queries, settings.databaseUrl, startedAt, settings.instanceId));

  // Every task due now, as the harness's adapters enqueue them.
  const producer = new Producer(engine, 1, 1, 1, {
    tickMs: settings.batchMs,
    batchMax: settings.batchMax,
  });
  const load = startOfferedLoad(settings, producer, tokens);
  const depthTarget = settings.producerMode === 'depth-target';
  const reportsDepth = settings.instanceId === 0;
  const depth = new DepthWatch(queries, depthTarget ? settings.batchMs : DEPTH_EVERY_MS, (n) =>
    load.onDepth(n),
  );
  if (reportsDepth || depthTarget) depth.start();
  const sampler = new Sampler(
    settings.sampleEveryS,
    settings.instanceId,
    {
      latency,
      enqueued: () => producer.snapshot().offered,
      completed: () => completed,
      depth: () => (reportsDepth ? (depth.latest ?? 0) : undefined),
      targetRate: () => (reportsDepth ? load.targetRate() : undefined),
    },
    writeStdout,
  );
  sampler.start();
  const offered =
    settings.producerMode === 'fixed'
      ? `fixed ${settings.producerRate}/s (paced by ${settings.producerPacing})`
      : `depth-target ${settings.targetDepth}`;
  console.error(
    `nest-delay adapter: ${offered}, ${settings.workers} workers, samples every ${settings.sampleEveryS} s`,
  );

  await stopRequested;
  sampler.stop();
  load.stop();
  tokens?.close();
  await depth.stop();
  await producer.stop();
  await engine.stop();
  await queries.end();
  console.error('nest-delay adapter: stopped');
}

main().then(
  () => process.exit(0),
  (error: Error) => {
    console.error(`nest-delay adapter: ${error.stack ?? error.message}`);
    process.exit(1);
  },
);
