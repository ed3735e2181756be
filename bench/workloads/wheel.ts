/**
 * `wheel`: the in-memory structure alone. TimingWheel vs Node's timers vs a
 * binary heap at 10k, 100k and 1M pending entries: add, cancel and fire rates,
 * and bytes per pending entry (heap + external memory after a full GC).
 * Measured in a child process of its own so nothing else is on its heap.
 *
 * Due times are random milliseconds 1 min–1 h ahead (what tasks look like);
 * fire hands out entries due within one second (random ms), counting CPU time,
 * so Node's timers are not charged for the wall-clock second they wait.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { TimingWheel } from 'nest-delay/internal';
import { BinaryHeap, type HeapEntry } from './binary-heap.js';
import { num, ratio, table } from '../harness/format.js';
import { log } from '../harness/progress.js';
import type { RunContext, Workload } from '../harness/workload.js';

const STRUCTURES = ['TimingWheel', 'setTimeout', 'binary heap'] as const;
type Structure = (typeof STRUCTURES)[number];

export interface WheelFigure {
  structure: Structure;
  entries: number;
  addPerSecond: number;
  cancelPerSecond: number;
  firePerSecond: number;
  bytesPerEntry: number;
}

/** A deterministic xorshift, so every structure gets the same due times. */
function randoms(count: number, seed: number): Float64Array {
  const out = new Float64Array(count);
  let x = seed | 0 || 1;
  for (let i = 0; i < count; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = (x >>> 0) / 2 ** 32;
  }
  return out;
}

function shuffled(count: number): Int32Array {
  const order = Int32Array.from({ length: count }, (_, i) => i);
  const r = randoms(count, 7);
  for (let i = count - 1; i > 0; i--) {
    const j = Math.floor(r[i] * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}

function memory(): number {
  for (let i = 0; i < 4; i++) global.gc!();
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
}

function cpuMs(): number {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
}

const noop = () => undefined;

/** Adds n entries and returns a function that cancels them in `order`. */
type Fill = (n: number, delays: Float64Array, order: Int32Array) => () => void;

/**
 * One structure to fill again and again. Node's timers live in per-process
 * lists that stay grown once used; the wheel and the heap are kept the same
 * way, so each timed pass finds its structure as a long-running app would.
 * setTimeout and the heap keep their handles in an array, timed and counted in
 * bytes, as a caller must to cancel by id; the wheel's own id index is in its figures.
 */
function filler(structure: Structure): Fill {
  if (structure === 'TimingWheel') {
    const wheel = new TimingWheel({ startMs: Date.now() });
    return (n, delays, order) => {
      const base = Date.now();
      for (let i = 0; i < n; i++) wheel.add(i, base + delays[i], undefined);
      return () => {
        for (let i = 0; i < n; i++) wheel.cancel(order[i]);
      };
    };
  }
  if (structure === 'setTimeout') {
    return (n, delays, order) => {
      const handles = new Array<NodeJS.Timeout>(n);
      for (let i = 0; i < n; i++) handles[i] = setTimeout(noop, delays[i]);
      return () => {
        for (let i = 0; i < n; i++) clearTimeout(handles[order[i]]);
      };
    };
  }
  const heap = new BinaryHeap();
  return (n, delays, order) => {
    const base = Date.now();
    const handles = new Array<HeapEntry>(n);
    for (let i = 0; i < n; i++) handles[i] = heap.push(i, base + delays[i]);
    return () => {
      for (let i = 0; i < n; i++) heap.remove(handles[order[i]]);
    };
  };
}

function workload(n: number): { delays: Float64Array; order: Int32Array } {
  return {
    delays: randoms(n, 42).map((r) => 60_000 + Math.floor(r * 3_540_000)),
    order: shuffled(n),
  };
}

/**
 * Adds n entries, then cancels them all in random order, both timed. No forced
 * GC right before: a full GC hands memory back, and the first allocations after
 * it fault fresh pages in; on our 2-core VM that alone swung the wheel's 10k add
 * rate between 0.5M/s and 9M/s across identical runs. Bytes are measured apart.
 */
function addAndCancel(fill: Fill, n: number): { addMs: number; cancelMs: number } {
  const { delays, order } = workload(n);
  let t = performance.now();
  const cancel = fill(n, delays, order);
  const addMs = performance.now() - t;
  t = performance.now();
  cancel();
  return { addMs, cancelMs: performance.now() - t };
}

/**
 * Heap + external bytes per pending entry, fixed parts of the structure
 * included. Run once per fresh process: Node keeps its timer-list map grown
 * after the timers are cleared, so a second pass in the same process found
 * setTimeout's 10k entries at 96-125 B instead of 309 B, as if the map were
 * free. So every structure starts fresh here, and pays for what it grows.
 */
function bytesPerEntry(structure: Structure, n: number): number {
  const { delays, order } = workload(n);
  const before = memory();
  const cancel = filler(structure)(n, delays, order);
  const bytes = (memory() - before) / n;
  cancel();
  return bytes;
}

/** n entries due within one second; CPU ms to hand every one of them out. */
async function fire(structure: Structure, n: number): Promise<number> {
  const offsets = randoms(n, 99).map((r) => Math.floor(r * 1000));
  const base = Date.now();
  if (structure === 'TimingWheel') {
    const wheel = new TimingWheel({ startMs: base });
    for (let i = 0; i < n; i++) wheel.add(i, base + 1000 + offsets[i], undefined);
    const t = cpuMs();
    let fired = 0;
    for (let now = base + 1000; fired < n; now += 1000) fired += wheel.advance(now).length;
    return cpuMs() - t;
  }
  if (structure === 'binary heap') {
    const heap = new BinaryHeap();
    for (let i = 0; i < n; i++) heap.push(i, base + 1000 + offsets[i]);
    const t = cpuMs();
    const end = base + 2000;
    while (heap.size > 0 && heap.peek()!.dueAtMs <= end) heap.pop();
    return cpuMs() - t;
  }
  // Real timers: start late enough that adding them all is done before the first fires.
  const lead = 500 + n / 500;
  let fired = 0;
  let t = 0;
  return new Promise<number>((resolve) => {
    const onFire = () => {
      if (++fired === n) resolve(cpuMs() - t);
    };
    for (let i = 0; i < n; i++) setTimeout(onFire, lead + offsets[i]);
    t = cpuMs();
  });
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function measure(sizes: number[]): Promise<WheelFigure[]> {
  const figures: WheelFigure[] = [];
  const fills = new Map(STRUCTURES.map((structure) => [structure, filler(structure)]));
  for (const structure of STRUCTURES) {
    addAndCancel(fills.get(structure)!, 10_000); // warm-up: let the JIT settle
    await fire(structure, 10_000);
  }
  for (const n of sizes) {
    for (const structure of STRUCTURES) {
      const reps = n <= 10_000 ? 9 : n <= 100_000 ? 5 : 3;
      const fill = fills.get(structure)!;
      addAndCancel(fill, n); // grows the structure to n, as a running app's would be
      const runs = [];
      const fires = [];
      for (let r = 0; r < reps; r++) {
        runs.push(addAndCancel(fill, n));
        fires.push(await fire(structure, n));
      }
      figures.push({
        structure,
        entries: n,
        addPerSecond: (n / median(runs.map((x) => x.addMs))) * 1000,
        cancelPerSecond: (n / median(runs.map((x) => x.cancelMs))) * 1000,
        firePerSecond: (n / Math.max(0.001, median(fires))) * 1000,
        bytesPerEntry: NaN, // filled in by the parent, from fresh processes
      });
      process.send?.({ progress: `${structure} ${n}` });
    }
  }
  return figures;
}

if (process.argv[2] === '--wheel-rates') {
  const sizes = JSON.parse(process.argv[3]) as number[];
  measure(sizes).then(
    (figures) => process.send!({ figures }, () => process.exit(0)),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
} else if (process.argv[2] === '--wheel-bytes') {
  const bytes = bytesPerEntry(process.argv[3] as Structure, Number(process.argv[4]));
  process.send!({ bytes }, () => process.exit(0));
}

/** Runs this file in a child process of its own and resolves with its last message. */
function runChild<T>(args: string[]): Promise<T> {
  const child = fork(fileURLToPath(import.meta.url), args, {
    execArgv: ['--expose-gc', '--max-old-space-size=8192'],
  });
  return new Promise((resolve, reject) => {
    let result: T | undefined;
    child.on('message', (m: { progress?: string }) => {
      if (m.progress) log(`  measured ${m.progress}`);
      else result = m as T;
    });
    child.on('exit', (code) =>
      code === 0 && result !== undefined
        ? resolve(result)
        : reject(new Error(`wheel child ${args.join(' ')} exited with ${code}`)),
    );
  });
}

async function measureAll(sizes: number[]): Promise<WheelFigure[]> {
  const { figures } = await runChild<{ figures: WheelFigure[] }>([
    '--wheel-rates',
    JSON.stringify(sizes),
  ]);
  for (const f of figures) {
    const passes: number[] = [];
    for (let r = 0; r < 3; r++) {
      const args = ['--wheel-bytes', f.structure, String(f.entries)];
      passes.push((await runChild<{ bytes: number }>(args)).bytes);
    }
    f.bytesPerEntry = median(passes);
    log(`  measured bytes of ${f.structure} ${f.entries}`);
  }
  return figures;
}

export const wheel: Workload<{ figures: WheelFigure[] }> = {
  name: 'wheel',
  title: 'Wheel: the in-memory structure',
  async run(ctx: RunContext) {
    const sizes = ctx.quick ? [10_000, 100_000] : [10_000, 100_000, 1_000_000];
    return { figures: await measureAll(sizes) };
  },
  markdown({ figures }) {
    const timers = (n: number) =>
      figures.find((f) => f.structure === 'setTimeout' && f.entries === n)!;
    const rows = figures.map((f) => [
      `${f.structure}`,
      num(f.entries),
      num(f.addPerSecond),
      num(f.cancelPerSecond),
      num(f.firePerSecond),
      num(f.bytesPerEntry, 0),
      f.structure === 'setTimeout' ? '1×' : ratio(f.addPerSecond, timers(f.entries).addPerSecond),
      f.structure === 'setTimeout' ? '1×' : ratio(f.bytesPerEntry, timers(f.entries).bytesPerEntry),
    ]);
    return table(
      [
        'structure',
        'pending',
        'add/s',
        'cancel/s',
        'fire/s (CPU)',
        'bytes/entry',
        'add vs setTimeout',
        'bytes vs setTimeout',
      ],
      rows,
    );
  },
};
