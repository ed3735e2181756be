/**
 * Without `app.enableShutdownHooks()` (or signal handling of the app's own
 * that calls `app.close()`), a SIGTERM kills the process without the
 * runtime's stop: its tasks stay leased until the lease expires and the next
 * instance waits that long before it runs them. Nothing in Nest tells a
 * module whether hooks are on; a SIGTERM listener is the sign both leave.
 * Test runners boot apps without hooks on purpose, so they are not warned.
 */
export function shutdownHooksMissing(
  sigtermListeners: number,
  env: Record<string, string | undefined>,
): boolean {
  const underTestRunner =
    env.JEST_WORKER_ID !== undefined || env.VITEST !== undefined || env.NODE_ENV === 'test';
  return sigtermListeners === 0 && !underTestRunner;
}
