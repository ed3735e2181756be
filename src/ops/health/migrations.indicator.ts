import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { DataSource } from 'typeorm';

/**
 * Up when the app's DataSource has no pending migration: the schema is the
 * one this code expects. Once seen applied it stays so (the migration list
 * is fixed for the life of the process), so only a pending answer is asked
 * again; a probe then costs no query.
 */
@Injectable()
export class MigrationsIndicator {
  private applied = false;

  constructor(
    private readonly dataSource: DataSource,
    private readonly health: HealthIndicatorService,
  ) {}

  async check(key: string) {
    const indicator = this.health.check(key);
    if (this.applied) return indicator.up();
    try {
      const pending = await this.dataSource.showMigrations();
      if (pending) return indicator.down({ message: 'migrations are pending; run them' });
      this.applied = true;
      return indicator.up();
    } catch (error) {
      return indicator.down({
        message: `cannot read the migrations table: ${error instanceof Error ? error.message : String(error)}`,
      });
    }
  }
}
