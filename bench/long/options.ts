/**
 * The long bench's command line: one code path for a two-minute smoke and a
 * full hour, only the numbers differ.
 */
import { PHASE_KINDS, type PhaseKind } from './phase-kinds.js';

export type SystemKind = 'nest-delay' | 'pg-boss' | 'floor';

export interface LongOptions {
  /** Tasks offered per second in every phase but high-load (1.5×). */
  rate: number;
  phaseSeconds: number;
  /** Tasks waiting at the start, due after the run ends. */
  pending: number;
  /** Share of offered tasks due now; the rest fall due over the next `aheadSeconds`. */
  nowShare: number;
  aheadSeconds: number;
  /** Instances (child processes) per system; kill-worker kills the last. */
  instances: number;
  /** Tasks run at once per instance. */
  workers: number;
  phases: PhaseKind[];
  systems: SystemKind[];
  sampleSeconds: number;
  /** Exit non-zero unless the ledger holds and every phase completed (the smoke). */
  assert: boolean;
  /** Where results go (JSON, Markdown, SVG); none with `--no-write`. */
  write: boolean;
  /** A saved run's JSON: its Markdown and plots written anew, nothing run. */
  report?: string;
}

const DEFAULTS: LongOptions = {
  rate: 2000,
  phaseSeconds: 400,
  pending: 1_000_000,
  nowShare: 0.5,
  aheadSeconds: 300,
  instances: 3,
  workers: 8,
  phases: [...PHASE_KINDS],
  systems: ['nest-delay', 'pg-boss'],
  sampleSeconds: 5,
  assert: false,
  write: true,
};

function positive(name: string, raw: string | undefined): number {
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`--${name} needs a positive number, got ${JSON.stringify(raw)}`);
  return value;
}

function listOf<T extends string>(
  name: string,
  raw: string | undefined,
  allowed: readonly T[],
): T[] {
  const items = (raw ?? '').split(',').filter(Boolean);
  const wrong = items.filter((i) => !allowed.includes(i as T));
  if (items.length === 0 || wrong.length)
    throw new Error(`--${name}: ${wrong.join(', ') || 'empty'} not among ${allowed.join(', ')}`);
  return items as T[];
}

export function parseOptions(argv: string[]): LongOptions {
  const o: LongOptions = { ...DEFAULTS };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const next = () => argv[++i];
    switch (flag) {
      case '--rate':
        o.rate = positive('rate', next());
        break;
      case '--phase-seconds':
        o.phaseSeconds = positive('phase-seconds', next());
        break;
      case '--pending':
        o.pending = Math.floor(Number(next()));
        break;
      case '--now-share':
        o.nowShare = Math.min(1, Math.max(0, Number(next())));
        break;
      case '--ahead-seconds':
        o.aheadSeconds = positive('ahead-seconds', next());
        break;
      case '--instances':
        o.instances = Math.floor(positive('instances', next()));
        break;
      case '--workers':
        o.workers = Math.floor(positive('workers', next()));
        break;
      case '--phases':
        o.phases = listOf('phases', next(), PHASE_KINDS);
        break;
      case '--systems':
        o.systems = listOf('systems', next(), ['nest-delay', 'pg-boss', 'floor'] as const);
        break;
      case '--sample-seconds':
        o.sampleSeconds = positive('sample-seconds', next());
        break;
      case '--assert':
        o.assert = true;
        break;
      case '--no-write':
        o.write = false;
        break;
      case '--report':
        o.report = next();
        break;
      default:
        throw new Error(`unknown argument ${flag}: see bench/README.md, "Long horizon"`);
    }
  }
  if (!Number.isInteger(o.pending) || o.pending < 0)
    throw new Error(`--pending needs a whole number ≥ 0, got ${o.pending}`);
  return o;
}
