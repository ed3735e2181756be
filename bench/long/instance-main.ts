/**
 * One instance of a system under test, in its own process so its RSS and CPU
 * are its own and kill-worker can SIGKILL it. Commands come over IPC from
 * the driver (instance.ts); each also runs a producer, its share of the load (load.ts).
 */
import type { LongSystem, LongSystemSettings, LongTask } from './long-system.js';
import { Producer } from './producer.js';
import type { SystemKind } from './options.js';

let system: LongSystem | undefined;
let producer: Producer | undefined;

// A connection lost while Postgres restarts must not end the process: the system retries.
process.on('unhandledRejection', (error) => console.error(`unhandled: ${String(error)}`));
// Never outlive the driver: a driver that crashed leaves no workers on the cluster.
process.on('disconnect', () => process.exit(0));

async function create(kind: SystemKind, settings: LongSystemSettings): Promise<LongSystem> {
  if (kind === 'nest-delay')
    return (await import('./nest-delay-system.js')).createNestDelaySystem(settings);
  if (kind === 'floor') return (await import('./floor-system.js')).createFloorSystem(settings);
  return (await import('./pg-boss-system.js')).createPgBossSystem(settings);
}

/** Pending tasks in bulk calls of 5,000, due evenly over [fromMs, fromMs + spanMs). */
async function loadPending(count: number, fromMs: number, spanMs: number): Promise<void> {
  for (let first = 1; first <= count; first += 5000) {
    const tasks: LongTask[] = [];
    for (let id = first; id < first + 5000 && id <= count; id++)
      tasks.push({ id, dueMs: fromMs + Math.floor(((id - 1) * spanMs) / count) });
    await system!.schedule(tasks);
  }
}

type Command =
  | { command: 'start'; kind: SystemKind; settings: LongSystemSettings }
  | { command: 'load'; count: number; fromMs: number; spanMs: number }
  | { command: 'produce'; firstId: number; nowShare: number; aheadMs: number; rate: number }
  | { command: 'rate'; rate: number }
  | { command: 'stop-producing' }
  | { command: 'usage' }
  | { command: 'stop' };

async function handle(message: Command): Promise<unknown> {
  switch (message.command) {
    case 'start':
      system = await create(message.kind, message.settings);
      await system.start();
      return null;
    case 'load': {
      const started = Date.now();
      await loadPending(message.count, message.fromMs, message.spanMs);
      return Date.now() - started;
    }
    case 'produce':
      producer = new Producer(system!, message.firstId, message.nowShare, message.aheadMs);
      producer.setRate(message.rate);
      return null;
    case 'rate':
      producer?.setRate(message.rate);
      return null;
    case 'stop-producing':
      // Its calls in flight settle first: the counts returned are final.
      await producer?.stop();
      return producer?.snapshot() ?? null;
    case 'usage': {
      const cpu = process.cpuUsage();
      return {
        rss: process.memoryUsage().rss,
        cpuMs: (cpu.user + cpu.system) / 1000,
        producer: producer?.snapshot() ?? null,
      };
    }
    case 'stop':
      await producer?.stop();
      await system?.stop();
      return null;
  }
}

process.on('message', (message: Command & { id: number }) => {
  handle(message).then(
    (result) => process.send?.({ id: message.id, ok: true, result }),
    (error: Error) =>
      process.send?.({ id: message.id, ok: false, error: error.stack ?? error.message }),
  );
});
