/**
 * The records the harness reads from an adapter's stdout, one JSON object a
 * line (CONTRIBUTING_ADAPTERS.md, "JSONL out"). Nothing else may reach
 * stdout: the harness logs any other line as noise.
 */
export const SYSTEM = 'nest-delay';

export interface Descriptor {
  kind: 'descriptor';
  system: string;
  event_tables: string[];
  extensions: string[];
  version: string;
  schema_version: string | null;
  db_name: string;
  started_at: string;
  instance_id: number;
}

export interface MetricRecord {
  t: string;
  system: string;
  kind: 'adapter';
  subject_kind: 'adapter';
  subject: '';
  metric: string;
  value: number;
  window_s: number;
  instance_id: number;
}

export type Write = (record: Descriptor | MetricRecord) => void;

export const writeStdout: Write = (record) => {
  process.stdout.write(`${JSON.stringify(record)}\n`);
};
