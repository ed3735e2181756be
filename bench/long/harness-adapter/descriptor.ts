/**
 * The startup record: which tables the engine really created in this
 * database (the harness checks they cover adapter.json's), the engine's
 * version and its last migration, for the run's manifest.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AdapterQueries } from './adapter-queries.js';
import { SYSTEM, type Descriptor } from './jsonl.js';

/** `nest-delay@<package version>`, with the checkout's commit when there is one. */
function engineVersion(): string {
  const manifest = createRequire(import.meta.url).resolve('nest-delay/package.json');
  const { version } = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string };
  try {
    const commit = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], {
      cwd: dirname(fileURLToPath(import.meta.url)),
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return `nest-delay@${version}+${commit}`;
  } catch {
    return `nest-delay@${version}`;
  }
}

export async function describeAdapter(
  queries: AdapterQueries,
  databaseUrl: string,
  startedAt: Date,
  instanceId: number,
): Promise<Descriptor> {
  return {
    kind: 'descriptor',
    system: SYSTEM,
    event_tables: await queries.engineTables(),
    extensions: [],
    version: engineVersion(),
    schema_version: await queries.schemaVersion(),
    db_name: decodeURIComponent(new URL(databaseUrl).pathname.slice(1)),
    started_at: startedAt.toISOString(),
    instance_id: instanceId,
  };
}
