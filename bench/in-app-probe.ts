/**
 * Loaded into the example app's process by api-under-backlog.ts (`node
 * --import <this> main.js`, with an IPC channel), so that the floor's drain
 * runs on the app's own event loop beside its HTTP side, as the engine's
 * does, and so that each phase can read what the process spent: its CPU and
 * its event loop's delay. The app itself is not changed: it never sees this
 * module, only shares its process with it.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startFloorDrain } from './floor-drain.js';

export type ProbeRequest =
  | { type: 'mark' }
  | { type: 'read' }
  | { type: 'floor-start'; url: string; concurrency: number; rate?: number }
  | { type: 'floor-stop' };

export interface ProbeReading {
  /** CPU of the app's process since the mark, user and system, in ms. */
  cpuMs: number;
  /** The event loop's delay since the mark, in ms. */
  loopP50: number;
  loopP99: number;
  loopMax: number;
}

if (process.send) {
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  let since = process.cpuUsage();
  let drain: { stop(): Promise<void> } | undefined;
  const reply = (message: unknown) => process.send?.(message);
  process.on('message', (message: ProbeRequest) => {
    switch (message.type) {
      case 'mark':
        delay.reset();
        since = process.cpuUsage();
        reply({ type: 'marked' });
        break;
      case 'read': {
        const cpu = process.cpuUsage(since);
        const reading: ProbeReading = {
          cpuMs: (cpu.user + cpu.system) / 1000,
          loopP50: delay.percentile(50) / 1e6,
          loopP99: delay.percentile(99) / 1e6,
          loopMax: delay.max / 1e6,
        };
        reply({ type: 'reading', reading });
        break;
      }
      case 'floor-start':
        drain = startFloorDrain(message.url, message.concurrency, message.rate);
        reply({ type: 'floor-started' });
        break;
      case 'floor-stop':
        void (drain?.stop() ?? Promise.resolve()).then(() => reply({ type: 'floor-stopped' }));
        drain = undefined;
        break;
    }
  });
  // The channel must not keep the app alive once it is asked to stop.
  process.channel?.unref();
}
