/**
 * The floor for firing on time: a bare `setTimeout` per task, armed for its
 * exact due time, then the effect on a pg pool of 10. Nothing durable, no
 * claim, no bookkeeping: what one process can do when it knows the due time.
 */
import pg from 'pg';
import { EFFECT_SQL } from '../harness/db.js';
import type { Task } from '../harness/plan.js';
import type { SystemFactory } from './system.js';

export const createTimeoutFloor: SystemFactory = (settings) => {
  const pool = new pg.Pool({ connectionString: settings.databaseUrl, max: settings.poolSize });
  const timers = new Set<NodeJS.Timeout>();
  const arm = (task: Task) => {
    const timer = setTimeout(
      () => {
        timers.delete(timer);
        pool.query(EFFECT_SQL, [task.orderId]).catch(() => undefined);
      },
      Math.max(0, task.dueAtMs - Date.now()),
    );
    timers.add(timer);
  };
  return {
    async start() {
      // Open the connections first, as the other systems' pools are by their start.
      const warm = await Promise.all(
        Array.from({ length: settings.poolSize }, () => pool.connect()),
      );
      for (const client of warm) client.release();
    },
    async scheduleOne(task) {
      arm(task);
    },
    async scheduleMany(tasks) {
      for (const task of tasks) arm(task);
    },
    async stop() {
      for (const timer of timers) clearTimeout(timer);
      await pool.end();
    },
  };
};
