import { Logger } from '@nestjs/common';

/**
 * One log line per admin action, tagged with the request id the caller got
 * back in X-Request-Id: what was asked, and what came of it (or why not).
 */
export class AdminActionLog {
  private readonly logger = new Logger('AdminAction');

  async record<T>(
    requestId: string,
    action: string,
    outcome: (result: T) => string,
    run: () => Promise<T>,
  ): Promise<T> {
    try {
      const result = await run();
      this.logger.log(`[${requestId}] ${action}: ${outcome(result)}`);
      return result;
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      this.logger.warn(`[${requestId}] ${action} refused: ${reason}`);
      throw error;
    }
  }
}
