/**
 * The container healthcheck, for images without curl or wget:
 * `node dist/src/ops/health/probe.js /health/ready` exits 0 when the app on
 * PORT answers the probe with a 2xx, 1 otherwise (an error, a 503, no answer
 * within 4 s).
 */
const path = process.argv[2] ?? '/health/ready';
const port = process.env.PORT ?? '3000';

fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(4_000) }).then(
  (response) => process.exit(response.ok ? 0 : 1),
  () => process.exit(1),
);
