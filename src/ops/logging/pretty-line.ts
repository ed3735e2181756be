import type { LogLevel } from '../../config/app-config.js';

const LABEL: Record<LogLevel, string> = {
  fatal: 'FATAL',
  error: 'ERROR',
  warn: 'WARN ',
  info: 'INFO ',
  debug: 'DEBUG',
  trace: 'TRACE',
};

/**
 * One readable line for development, instead of pino-pretty (a dependency
 * and a worker thread for what is a format string): time, level, context,
 * message, then the scope's fields as key=value, and a stack below if any.
 */
export function prettyLine(
  level: LogLevel,
  time: Date,
  context: string | undefined,
  message: string,
  fields: Record<string, unknown>,
  stack?: string,
): string {
  const extras = Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(' ');
  const head = `${time.toISOString().slice(11, 23)} ${LABEL[level]} ${context ? `[${context}] ` : ''}${message}`;
  return `${extras ? `${head}  ${extras}` : head}${stack ? `\n${stack}` : ''}\n`;
}
