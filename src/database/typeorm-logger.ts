import { Logger } from '@nestjs/common';
import type { Logger as TypeOrmLoggerInterface } from 'typeorm';

const logger = new Logger('TypeORM');

/**
 * TypeORM's messages through the app's logger (JSON in production, with the
 * request id or task of the line), instead of its own console output: its
 * errors, warnings and migrations. TypeORM hands a custom logger every
 * query too; those are dropped here, as `logging` without 'query' means.
 */
export class TypeOrmLogger implements TypeOrmLoggerInterface {
  logQuery(): void {}

  logQueryError(error: string | Error, query: string): void {
    logger.error(`${error instanceof Error ? error.message : error} in ${query.trim()}`);
  }

  logQuerySlow(time: number, query: string): void {
    logger.warn(`Slow query (${time} ms): ${query.trim()}`);
  }

  logSchemaBuild(): void {}

  logMigration(message: string): void {
    logger.log(message);
  }

  log(level: 'log' | 'info' | 'warn', message: unknown): void {
    const text = message instanceof Error ? message.message : String(message);
    if (level === 'warn') logger.warn(text);
    else logger.log(text);
  }
}
