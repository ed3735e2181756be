/** What each system does in an instance process of the long bench. */
export interface LongTask {
  id: number;
  dueMs: number;
}

export interface LongSystemSettings {
  url: string;
  /** 0-based; the ledger records which instance ran an effect. */
  instance: number;
  workers: number;
  /** Offered rate, for systems that size their fetch batch by it (pg-boss). */
  rate: number;
}

export interface LongSystem {
  start(): Promise<void>;
  /** Through the system's bulk API; the tasks are durable when it resolves. */
  schedule(tasks: LongTask[]): Promise<void>;
  stop(): Promise<void>;
}

/** The ~1 ms of work every handler does before writing its ledger row. */
export const WORK_MS = 1;

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
