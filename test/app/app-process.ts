import { spawn, type ChildProcess } from 'node:child_process';
import { preparedStatementsEnv } from '../support/test-database.js';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { adminBearer, TEST_AUTH_SECRET } from '../support/auth.js';

/** The compiled service in a child process, started the way `npm run start:prod` starts it. */
export interface AppProcess {
  baseUrl: string;
  child: ChildProcess;
  output(): string;
  /** SIGINT (or `signal`) and wait for a clean exit (the exit code). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** SIGKILL: no shutdown hook runs, as in a crash. */
  kill(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/**
 * Starts the service with `env`, in `cwd` (this directory by default), from
 * the build in `build` (this tree's by default; another release's in a
 * deploy test, which then runs in that tree). Users' tokens are HS256 with
 * TEST_AUTH_SECRET unless `env` sets an AUTH_* variable, or
 * `testSecret: false` leaves the app to its own devices.
 */
export async function startApp(
  env: Record<string, string>,
  readyTimeoutMs = 30_000,
  { cwd, build, testSecret = true }: { cwd?: string; build?: string; testSecret?: boolean } = {},
): Promise<AppProcess> {
  const port = await freePort();
  const ownAuth = !testSecret || Object.keys(env).some((name) => name.startsWith('AUTH_'));
  const child = spawn(process.execPath, [resolve(build ?? '.', 'dist/src/main.js')], {
    cwd: cwd ?? build,
    env: {
      PATH: process.env.PATH ?? '',
      NO_COLOR: '1',
      ...preparedStatementsEnv,
      ...(ownAuth ? {} : { AUTH_JWT_SECRET: TEST_AUTH_SECRET }),
      ...env,
      PORT: String(port),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );

  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`app did not start in ${readyTimeoutMs} ms:\n${output}`)),
      readyTimeoutMs,
    );
    const check = () => {
      if (output.includes('Listening on')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`app exited with ${code} before listening:\n${output}`));
    });
  });

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    child,
    output: () => output,
    async stop(signal = 'SIGINT') {
      child.kill(signal);
      return exited;
    },
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/**
 * A JSON request; as an operator (an admin's token, which sees every order)
 * unless `authorization` says otherwise (null: no header).
 */
export async function json(
  method: string,
  url: string,
  body?: unknown,
  authorization: string | null = adminBearer(),
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
  const send = () =>
    fetch(url, {
      method,
      headers: {
        ...(body !== undefined && { 'content-type': 'application/json' }),
        ...(authorization !== null && { authorization }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  let res: Response;
  try {
    res = await send();
  } catch (error) {
    // A pooled keep-alive socket the app closed (Node's 5 s idle timeout) just
    // as fetch reused it: the request never reached the app, so it is sent
    // once more, on a new socket. Anything else, or a second failure, is the test's.
    if ((error as { cause?: { code?: string } }).cause?.code !== 'UND_ERR_SOCKET') throw error;
    res = await send();
  }
  return { status: res.status, body: await res.json() };
}

/** Polls until the check passes; real time is the point of these tests. */
export async function eventually<T>(
  probe: () => Promise<T>,
  accept: (value: T) => boolean,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (accept(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`still not there after ${timeoutMs} ms: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
