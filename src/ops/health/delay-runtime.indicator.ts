import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { DelayService } from 'nest-delay';

/**
 * Up when the delay runtime is started and holds a live lease: it fires,
 * claims and loads tasks. From `DelayService.stats()` (memory, no query); a
 * lease that stopped being renewed (its heartbeats failing) turns it down
 * once it has run out, when other instances may take its tasks.
 */
@Injectable()
export class DelayRuntimeIndicator {
  constructor(
    private readonly delay: DelayService,
    private readonly health: HealthIndicatorService,
  ) {}

  check(key: string) {
    const indicator = this.health.check(key);
    const { running, lease, instanceId } = this.delay.stats();
    const expiresAt = lease.expiresAt?.toISOString() ?? null;
    if (!running)
      return indicator.down({ message: 'the delay runtime is not running', instanceId });
    if (!lease.live) {
      return indicator.down({
        message: expiresAt
          ? `the lease expired at ${expiresAt} and was not renewed`
          : 'no lease yet',
        instanceId,
        leaseExpiresAt: expiresAt,
      });
    }
    return indicator.up({ instanceId, leaseExpiresAt: expiresAt });
  }
}
