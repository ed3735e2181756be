import { Injectable } from '@nestjs/common';
import type { ScheduleSpec } from './schedule-statements.js';
import type { Recurrence } from './recurrence.js';

/** The schedules this instance's code declares (@RecurringTask), filled at boot by the explorer. */
@Injectable()
export class ScheduleRegistry {
  private readonly declared = new Map<string, { spec: ScheduleSpec; recurrence: Recurrence }>();

  declare(spec: ScheduleSpec, recurrence: Recurrence, where: string): void {
    const existing = this.declared.get(spec.name);
    if (existing) {
      throw new TypeError(`${where}: schedule ${JSON.stringify(spec.name)} is declared twice`);
    }
    this.declared.set(spec.name, { spec, recurrence });
  }

  all(): Array<{ spec: ScheduleSpec; recurrence: Recurrence }> {
    return [...this.declared.values()];
  }
}
