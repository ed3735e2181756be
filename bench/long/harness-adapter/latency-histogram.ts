/**
 * Latencies in log-linear buckets (the shape of an HDR histogram): every
 * value below 2,048 µs has its own bucket, then each doubling is cut into
 * 1,024 equal buckets, so a bucket is at most 1/1024 of its values wide.
 * Reporting a bucket's midpoint is within 0.05% of any value in it: three
 * significant figures, as the public harness asks, in memory that grows with
 * the largest value recorded, never with how many were.
 */
const PER_DOUBLING = 1024;
/** Values below this are exact. */
const EXACT = 2 * PER_DOUBLING;
/** 2^37 µs is about 38 hours: a longer latency is recorded as that. */
const MAX_VALUE_US = 2 ** 37 - 1;

function bucketOf(us: number): number {
  if (us < EXACT) return us;
  let shift = Math.floor(Math.log2(us)) - 10;
  // log2 of a large integer can round across a power of two: correct by one.
  if (Math.floor(us / 2 ** shift) >= EXACT) shift += 1;
  else if (Math.floor(us / 2 ** shift) < PER_DOUBLING) shift -= 1;
  return EXACT + (shift - 1) * PER_DOUBLING + (Math.floor(us / 2 ** shift) - PER_DOUBLING);
}

/** The value a bucket stands for: itself when exact, else the middle of its integers. */
function valueOf(bucket: number): number {
  if (bucket < EXACT) return bucket;
  const shift = Math.floor((bucket - EXACT) / PER_DOUBLING) + 1;
  const width = 2 ** shift;
  const low = (PER_DOUBLING + ((bucket - EXACT) % PER_DOUBLING)) * width;
  return low + (width - 1) / 2;
}

export class LatencyHistogram {
  private counts = new Uint32Array(EXACT);
  private total = 0;

  get count(): number {
    return this.total;
  }

  /** One latency in microseconds (negative, from clocks a little apart, counts as 0). */
  record(us: number): void {
    const bucket = bucketOf(Math.min(MAX_VALUE_US, Math.max(0, Math.round(us))));
    if (bucket >= this.counts.length) this.grow(bucket + 1);
    this.counts[bucket] += 1;
    this.total += 1;
  }

  add(other: LatencyHistogram): void {
    if (other.counts.length > this.counts.length) this.grow(other.counts.length);
    for (let i = 0; i < other.counts.length; i++) this.counts[i] += other.counts[i];
    this.total += other.total;
  }

  clear(): void {
    this.counts.fill(0);
    this.total = 0;
  }

  /** The nearest-rank percentile (0 < p ≤ 100) in microseconds; 0 when empty. */
  percentile(p: number): number {
    if (this.total === 0) return 0;
    const rank = Math.max(1, Math.ceil((p / 100) * this.total));
    let seen = 0;
    for (let bucket = 0; bucket < this.counts.length; bucket++) {
      seen += this.counts[bucket];
      if (seen >= rank) return valueOf(bucket);
    }
    return valueOf(this.counts.length - 1);
  }

  private grow(length: number): void {
    const counts = new Uint32Array(Math.max(length, this.counts.length * 2));
    counts.set(this.counts);
    this.counts = counts;
  }
}
