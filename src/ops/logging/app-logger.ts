import type { LoggerService } from '@nestjs/common';
import { pino, type DestinationStream, type Logger as Pino } from 'pino';
import { LOG_LEVELS, type LogFormat, type LogLevel } from '../../config/app-config.js';
import { scopeFields } from './log-record.js';
import { prettyLine } from './pretty-line.js';

/** Nest's levels in pino's words. */
const LEVEL_OF = {
  fatal: 'fatal',
  error: 'error',
  warn: 'warn',
  log: 'info',
  debug: 'debug',
  verbose: 'trace',
} as const satisfies Record<string, LogLevel>;

type NestLevel = keyof typeof LEVEL_OF;

export interface AppLoggerOptions {
  format: LogFormat;
  level: LogLevel;
  /** Where lines go (default stdout); tests pass a stream to read them back. */
  destination?: DestinationStream;
}

/**
 * The app's logger, behind Nest's LoggerService so that every `new
 * Logger(context)` in the app and in nest-delay writes through it. JSON lines
 * (pino) or one readable line each; either way each line carries the request
 * id of the request it was logged in, or the id, type, key and attempt of
 * the task whose handler was running (see scopeFields).
 *
 * Written on pino itself rather than nestjs-pino: its versions for NestJS 12
 * needed Node 22 when this app still ran on Node 20.
 */
export class AppLogger implements LoggerService {
  private readonly pino: Pino | undefined;
  private readonly threshold: number;
  private readonly out: DestinationStream;

  constructor(private readonly options: AppLoggerOptions) {
    // Synchronous: a line written just before process.exit (a failed start,
    // the end of a shutdown) is not lost in a buffer. Lines are few (one per
    // request, the rest on events), so the write per line is no cost.
    this.out = options.destination ?? pino.destination({ dest: 1, sync: true });
    this.threshold = rank(options.level);
    if (options.format === 'json') {
      this.pino = pino(
        {
          level: options.level,
          base: { pid: process.pid },
          timestamp: pino.stdTimeFunctions.isoTime,
          formatters: { level: (label) => ({ level: label }) },
        },
        this.out,
      );
    }
  }

  log(message: unknown, ...rest: unknown[]) {
    this.write('log', message, rest);
  }
  error(message: unknown, ...rest: unknown[]) {
    this.write('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]) {
    this.write('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]) {
    this.write('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]) {
    this.write('verbose', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]) {
    this.write('fatal', message, rest);
  }

  /**
   * Nest calls `error(message, stack?, context?)` and the others
   * `(message, context?)`: the last string is the context, an earlier one on
   * error the stack. An object message is merged into the line's fields.
   */
  private write(nestLevel: NestLevel, message: unknown, rest: unknown[]): void {
    const level = LEVEL_OF[nestLevel];
    if (rank(level) > this.threshold) return;
    const params = [...rest];
    const context =
      params.length > 0 && typeof params[params.length - 1] === 'string'
        ? (params.pop() as string)
        : undefined;
    let stack = params.find((p): p is string => typeof p === 'string');
    let text: string;
    let extra: Record<string, unknown> = {};
    if (message instanceof Error) {
      text = message.message;
      stack ??= message.stack;
    } else if (message !== null && typeof message === 'object') {
      const { msg, message: m, ...fields } = message as Record<string, unknown>;
      text = String(msg ?? m ?? '');
      extra = fields;
    } else {
      text = String(message);
    }
    const fields = { context, ...scopeFields(), ...extra };
    if (this.pino) {
      this.pino[level](stack ? { ...fields, stack } : fields, text);
      return;
    }
    const { context: _context, ...shown } = fields;
    this.out.write(prettyLine(level, new Date(), context, text, shown, stack));
  }
}

function rank(level: LogLevel): number {
  return LOG_LEVELS.indexOf(level);
}
