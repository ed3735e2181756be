import { CreateDelayedTask1763800000000 } from './1763800000000-CreateDelayedTask.js';

/** Every migration, in order. Listed by class so the app, the CLI and the tests share one list. */
export const migrations = [CreateDelayedTask1763800000000];
