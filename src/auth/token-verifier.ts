import {
  createRemoteJWKSet,
  errors,
  jwtVerify,
  type JWTPayload,
  type JWTVerifyOptions,
} from 'jose';
import type { AuthConfig, Secret } from '../config/auth-config.js';
import * as messages from './auth.messages.js';
import type { Caller } from './caller.js';

/** The one algorithm of a shared secret. */
export const SECRET_ALGORITHMS = ['HS256'] as const;
/**
 * An identity provider's keys are public: only asymmetric algorithms, so a
 * token signed with HMAC over a public key (the classic alg confusion) or
 * with `none` never verifies.
 */
export const JWKS_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
] as const;
/** How far apart the issuer's clock and ours may be for exp and nbf. */
export const CLOCK_TOLERANCE_SECONDS = 5;
export const ADMIN_ROLE = 'admin';

const LONE_SURROGATE = /\p{Cs}/u;

/** A token the request cannot be let through with: a 401, with what was wrong. */
export class InvalidTokenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidTokenError';
  }
}

/** The identity provider's keys could not be had: not the client's fault, a 503. */
export class KeysUnavailableError extends Error {
  constructor(cause: unknown) {
    super(messages.keysUnavailable, { cause });
    this.name = 'KeysUnavailableError';
  }
}

/** What verifies tokens: AuthConfig with the development secret, if any, read. */
export type VerifierSettings =
  | { mode: 'secret'; secret: Secret; issuer?: string; audience?: string }
  | { mode: 'jwks'; jwksUrl: string; issuer: string; audience: string };

/**
 * Verifies a user's bearer JWT with jose: the algorithms pinned, `exp` and
 * `sub` required, the issuer and audience checked when configured (always
 * with JWKS), 5 s of clock tolerance. Returns the Caller it names.
 */
export class TokenVerifier {
  /** jwtVerify bound to the secret or the provider's key set; undefined when tokens are off. */
  private readonly verifyJwt:
    ((token: string, options: JWTVerifyOptions) => Promise<{ payload: JWTPayload }>) | undefined;
  private readonly algorithms: readonly string[];
  private readonly settings: VerifierSettings | undefined;

  /** AUTH_DISABLED=true: no token is checked, and every caller is trusted like an admin. */
  readonly disabled: boolean;

  constructor(resolved: ResolvedAuth) {
    this.disabled = resolved.mode === 'disabled';
    const settings = resolved.mode === 'disabled' ? undefined : resolved;
    this.settings = settings;
    if (!settings) {
      this.algorithms = [];
    } else if (settings.mode === 'secret') {
      const key = new TextEncoder().encode(settings.secret.reveal());
      this.verifyJwt = (token, options) => jwtVerify(token, key, options);
      this.algorithms = SECRET_ALGORITHMS;
    } else {
      // jose caches the set, refetches it for an unknown kid at most every 30 s, times out at 5 s.
      const keys = createRemoteJWKSet(new URL(settings.jwksUrl));
      this.verifyJwt = (token, options) => jwtVerify(token, keys, options);
      this.algorithms = JWKS_ALGORITHMS;
    }
  }

  async verify(token: string): Promise<Caller> {
    if (!this.settings || !this.verifyJwt)
      throw new Error('TokenVerifier.verify called with AUTH_DISABLED=true');
    let payload: JWTPayload;
    try {
      ({ payload } = await this.verifyJwt(token, {
        algorithms: [...this.algorithms],
        issuer: this.settings.issuer,
        audience: this.settings.audience,
        requiredClaims: ['exp', 'sub'],
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
      }));
    } catch (error) {
      throw this.explain(error);
    }
    return { userId: subject(payload.sub), admin: roles(payload.roles).includes(ADMIN_ROLE) };
  }

  private explain(error: unknown): Error {
    if (error instanceof errors.JWTExpired)
      return new InvalidTokenError(messages.tokenExpired(error.payload.exp));
    if (error instanceof errors.JWTClaimValidationFailed)
      return new InvalidTokenError(
        messages.claimRejected(error.claim, error.reason, error.message),
      );
    if (error instanceof errors.JWSSignatureVerificationFailed)
      return new InvalidTokenError(messages.badSignature);
    if (error instanceof errors.JOSEAlgNotAllowed || error instanceof errors.JOSENotSupported)
      return new InvalidTokenError(messages.algorithmRejected(this.algorithms));
    if (
      error instanceof errors.JWKSNoMatchingKey ||
      error instanceof errors.JWKSMultipleMatchingKeys
    )
      return new InvalidTokenError(messages.noMatchingKey);
    if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid)
      return new InvalidTokenError(messages.malformedToken);
    // Anything else from a key set is the provider (down, slow, a bad answer), not the token.
    if (this.settings?.mode === 'jwks') return new KeysUnavailableError(error);
    return error instanceof Error ? error : new Error(String(error));
  }
}

function subject(sub: unknown): string {
  if (
    typeof sub !== 'string' ||
    sub.length < 1 ||
    sub.length > 64 ||
    sub.includes('\0') ||
    LONE_SURROGATE.test(sub)
  ) {
    throw new InvalidTokenError(messages.subjectInvalid);
  }
  return sub;
}

/** `roles` as an array of strings, or one space-separated string (as OAuth's `scope`); absent is none. */
function roles(value: unknown): string[] {
  if (value === undefined) return [];
  if (typeof value === 'string') return value.split(' ');
  if (Array.isArray(value) && value.every((role) => typeof role === 'string')) return value;
  throw new InvalidTokenError(messages.rolesInvalid);
}

export type ResolvedAuth = VerifierSettings | { mode: 'disabled' };

/** AuthConfig as the verifier takes it: the development secret, in dev-secret mode, given. */
export function withDevSecret(auth: AuthConfig, devSecret: () => Secret): ResolvedAuth {
  if (auth.mode !== 'dev-secret') return auth;
  return { ...auth, mode: 'secret', secret: devSecret() };
}
