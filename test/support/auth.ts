import { createHmac } from 'node:crypto';

/** The HS256 secret every test app verifies users' tokens with (AUTH_JWT_SECRET), unless a test says otherwise. */
export const TEST_AUTH_SECRET = 'test-auth-secret-7f3a9c2e51d84b06a1e9c3f5d7b20e48';

export interface TokenOptions {
  /** `roles: ['admin']`: sees and acts on every order. */
  admin?: boolean;
  secret?: string;
  /** Seconds from now; negative for a token that expired. Default one hour. */
  expiresIn?: number | null;
  issuer?: string;
  audience?: string;
  /** Claims to add or override (`sub: 42`, `roles: 'x'`). */
  claims?: Record<string, unknown>;
}

const base64url = (value: string | Buffer) => Buffer.from(value).toString('base64url');

/**
 * A user's HS256 JWT, signed here with node:crypto rather than the app's
 * jose: a token any other library makes verifies too. Synchronous, so it
 * goes straight into supertest's `.set()`.
 */
export function userToken(sub: string, options: TokenOptions = {}): string {
  const now = Math.floor(Date.now() / 1000);
  const expiresIn = options.expiresIn === undefined ? 3600 : options.expiresIn;
  const payload = {
    sub,
    iat: now,
    ...(expiresIn !== null && { exp: now + expiresIn }),
    ...(options.admin && { roles: ['admin'] }),
    ...(options.issuer && { iss: options.issuer }),
    ...(options.audience && { aud: options.audience }),
    ...options.claims,
  };
  return signHs256({ alg: 'HS256', typ: 'JWT' }, payload, options.secret ?? TEST_AUTH_SECRET);
}

export function signHs256(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  secret: string | Buffer,
): string {
  const input = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(payload))}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}

/** An unsecured JWT (`alg: none`, no signature), which must never be accepted. */
export function unsignedToken(payload: Record<string, unknown>): string {
  return `${base64url(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${base64url(JSON.stringify(payload))}.`;
}

/** The Authorization header of `userToken(sub, options)`. */
export const bearer = (sub: string, options?: TokenOptions) => `Bearer ${userToken(sub, options)}`;

/** An operator's token: the admin role, so every order is visible. */
export const adminBearer = (sub = 'test-admin') => bearer(sub, { admin: true });
