import { Inject, Injectable } from '@nestjs/common';
import { CLOCK, type Clock } from '../index.js';

/** Failed authentications a client may make in a window before it has to wait. */
export const MAX_FAILURES = 10;
export const FAILURE_WINDOW_MS = 60_000;
/** Clients remembered at most; past that the longest-known is forgotten first. */
const MAX_CLIENTS = 10_000;

/**
 * Counts failed authentications per client (IP address), in this process's
 * memory: after MAX_FAILURES within FAILURE_WINDOW_MS, the client is refused
 * until the oldest of them is a window old. Each instance counts for itself,
 * and a restart forgets; with N instances behind a balancer a client gets up
 * to N × MAX_FAILURES tries a minute, still hopeless against a 128-bit token.
 */
@Injectable()
export class FailureThrottle {
  private readonly failures = new Map<string, number[]>();

  constructor(@Inject(CLOCK) private readonly clock: Clock) {}

  /** Milliseconds until `client` may try again; 0 if it may now. */
  waitFor(client: string): number {
    const recent = this.recent(client);
    if (recent.length < MAX_FAILURES) return 0;
    return recent[recent.length - MAX_FAILURES] + FAILURE_WINDOW_MS - this.clock.now();
  }

  fail(client: string): void {
    const recent = this.recent(client);
    recent.push(this.clock.now());
    // Map keeps insertion order: re-inserting moves the client to the back.
    this.failures.delete(client);
    this.failures.set(client, recent.slice(-MAX_FAILURES));
    if (this.failures.size > MAX_CLIENTS) {
      this.failures.delete(this.failures.keys().next().value as string);
    }
  }

  private recent(client: string): number[] {
    const since = this.clock.now() - FAILURE_WINDOW_MS;
    const recent = (this.failures.get(client) ?? []).filter((at) => at > since);
    if (recent.length === 0) this.failures.delete(client);
    return recent;
  }
}
