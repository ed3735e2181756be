/**
 * A progress bar on stderr for the long waits. On a terminal it redraws one
 * line; elsewhere (CI logs) it prints a line at most every 10 s.
 */
const WIDTH = 28;

export class Progress {
  private readonly started = Date.now();
  private lastDraw = 0;
  private finished = false;

  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly unit = '',
  ) {
    this.update(0);
  }

  update(done: number): void {
    if (this.finished) return;
    const now = Date.now();
    const tty = process.stderr.isTTY;
    if (done < this.total && now - this.lastDraw < (tty ? 100 : 10_000)) return;
    this.lastDraw = now;
    const fraction = this.total > 0 ? Math.min(1, done / this.total) : 1;
    const filled = Math.round(fraction * WIDTH);
    const bar = '█'.repeat(filled) + '░'.repeat(WIDTH - filled);
    const elapsed = ((now - this.started) / 1000).toFixed(0);
    const line = `  ${this.label} ${bar} ${(fraction * 100).toFixed(0).padStart(3)}% ${fmt(done)}/${fmt(this.total)}${this.unit} ${elapsed}s`;
    if (tty) process.stderr.write(`\r${line}\x1b[K`);
    else process.stderr.write(`${line}\n`);
  }

  done(note = ''): void {
    if (this.finished) return;
    this.lastDraw = 0;
    this.update(this.total);
    this.finished = true;
    if (process.stderr.isTTY) process.stderr.write(note ? ` ${note}\n` : '\n');
    else if (note) process.stderr.write(`  ${note}\n`);
  }
}

function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

export function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Sleeps `ms` while the bar fills with the seconds. */
export async function sleepWithBar(label: string, ms: number): Promise<void> {
  const bar = new Progress(label, Math.round(ms / 1000), 's');
  const end = Date.now() + ms;
  while (Date.now() < end) {
    await sleep(Math.min(500, end - Date.now()));
    bar.update(Math.round((ms - (end - Date.now())) / 1000));
  }
  bar.done();
}
