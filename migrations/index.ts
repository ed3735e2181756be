import { CreateDelayedTask1763800000000 } from './1763800000000-CreateDelayedTask.js';
import { CreateOrders1763800001000 } from './1763800001000-CreateOrders.js';

/** Every migration, in order. Listed by class so the app, the CLI and the tests share one list. */
export const migrations = [CreateDelayedTask1763800000000, CreateOrders1763800001000];
