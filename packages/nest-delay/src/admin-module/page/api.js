// Talks to the admin API (under the page's own path) with the pasted token. EventSource cannot send an
// Authorization header, so the live stream is read with fetch and a
// ReadableStream instead: the token never goes into a URL (where logs and
// history would keep it), and no second kind of credential is needed.

const TOKEN_KEY = 'nest-delay.admin-token';

const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.content ?? '';
/** Where the module is mounted, with its trailing slash: `/admin/` by default. */
const API = `${meta('delay-admin-base')}api`;
/** 'bearer': the API asks for the token; 'none': the app's guard alone decides. */
export const needsToken = meta('delay-admin-auth') !== 'none';
/** Put before a bare id typed in the timeline's search ('order:'), or ''. */
export const entityPrefix = meta('delay-admin-entity-prefix');

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

/** The server refused the token (401). */
export class AuthError extends Error {}
/** No answer at all: the server is down or the network is. */
export class UnreachableError extends Error {}
/** An answer that is an error; `message` is the server's own words, `field` the input it blames. */
export class ApiError extends Error {
  constructor(status, message, field = null) {
    super(message);
    this.status = status;
    this.field = field;
  }
}

const headers = (extra = {}) =>
  needsToken ? { Authorization: `Bearer ${token.get() ?? ''}`, ...extra } : extra;

const messageOf = (body) => {
  const message = body && typeof body === 'object' ? body.message : undefined;
  return Array.isArray(message) ? message.join('; ') : message;
};

export async function api(path, { method = 'GET', body } = {}) {
  let response;
  try {
    response = await fetch(`${API}${path}`, {
      method,
      headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
    });
  } catch {
    throw new UnreachableError(`The server at ${location.origin} cannot be reached.`);
  }
  if (response.status === 401 || (!needsToken && response.status === 403))
    throw new AuthError(
      needsToken ? 'The server refused this token.' : 'The app refused this browser.',
    );
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    // A proxy's HTML error page, say: reported by status below.
  }
  if (response.status === 429) {
    const wait = response.headers.get('Retry-After');
    throw new ApiError(
      429,
      `Too many refused tokens from here: try again in ${wait ?? 'a few'} s.`,
    );
  }
  if (!response.ok) {
    // A proxy answering for a server that is down.
    if (data === null && response.status >= 502) {
      throw new UnreachableError(
        `The server behind ${location.origin} does not answer (${response.status}).`,
      );
    }
    throw new ApiError(
      response.status,
      messageOf(data) ?? `${response.status} ${response.statusText}`,
      data && typeof data.field === 'string' ? data.field : null,
    );
  }
  return data;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A stream that sent nothing for this long is taken for dead (snapshots come every 2 s). */
const SILENCE_MS = 15_000;

/**
 * Reads the Server-Sent Events at `path` and calls `onEvent(type, data)` for
 * each. Reconnects on its own, waiting 1 s, then twice as long each time up
 * to 15 s; `onStatus` hears 'on', 'retrying' (with the wait) and
 * 'unauthorized' (then it stops). Returns `{ close }`.
 */
export function openStream(path, { onEvent, onStatus }) {
  let stopped = false;
  let controller;
  let silence;
  let wait = 1_000;

  const watch = () => {
    clearTimeout(silence);
    silence = setTimeout(() => controller?.abort(), SILENCE_MS);
  };

  async function readOnce() {
    controller = new AbortController();
    watch();
    const response = await fetch(`${API}${path}`, {
      headers: headers({ Accept: 'text/event-stream' }),
      signal: controller.signal,
      cache: 'no-store',
    });
    if (response.status === 401 || (!needsToken && response.status === 403)) return 'unauthorized';
    if (!response.ok || !response.body) throw new Error(`the stream answered ${response.status}`);
    onStatus('on');
    wait = 1_000;
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return 'ended';
      watch();
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
      let end;
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let type = 'message';
        const data = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('event:')) type = line.slice(6).trim();
          else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
        }
        if (data.length > 0) onEvent(type, JSON.parse(data.join('\n')));
      }
    }
  }

  (async () => {
    while (!stopped) {
      try {
        if ((await readOnce()) === 'unauthorized') {
          stopped = true;
          clearTimeout(silence);
          onStatus('unauthorized');
          return;
        }
      } catch {
        // Unreachable, dropped or silent: all mean "try again".
      }
      clearTimeout(silence);
      if (stopped) return;
      onStatus('retrying', wait);
      await sleep(wait);
      wait = Math.min(wait * 2, 15_000);
    }
  })();

  return {
    close() {
      stopped = true;
      clearTimeout(silence);
      controller?.abort();
    },
  };
}
