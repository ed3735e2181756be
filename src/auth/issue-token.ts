import { SignJWT } from 'jose';
import { loadAuthConfig } from '../config/auth-config.js';
import { ConfigError } from '../config/config-error.js';
import { loadOrCreateDevSecret } from './dev-auth-secret.js';
import { ADMIN_ROLE, SECRET_ALGORITHMS } from './token-verifier.js';

export const TOKEN_USAGE =
  'usage: npm run -s token -- <userId> [--admin] [--expires <n>s|m|h|d (1h)]';

export interface TokenRequest {
  userId: string;
  admin: boolean;
  expires: string;
}

/** The command line's request, or an Error whose message says what is wrong with it. */
export function parseTokenArgs(args: readonly string[]): TokenRequest | Error {
  let userId: string | undefined;
  let admin = false;
  let expires = '1h';
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--admin') admin = true;
    else if (arg === '--expires') {
      const value = args[++i];
      if (value === undefined || !/^[1-9]\d{0,5}[smhd]$/.test(value))
        return new Error(
          `--expires takes a duration such as 30m, 1h or 7d; got ${JSON.stringify(value ?? '')}`,
        );
      expires = value;
    } else if (arg.startsWith('--')) return new Error(`unknown option ${arg}`);
    else if (userId === undefined) userId = arg;
    else
      return new Error(`one userId only; got ${JSON.stringify(userId)} and ${JSON.stringify(arg)}`);
  }
  if (userId === undefined) return new Error('a userId is required');
  if (userId.length > 64 || userId.includes('\0'))
    return new Error(`userId must be 1 to 64 characters; got ${userId.length}`);
  return { userId, admin, expires };
}

/**
 * A token for `request`, signed with what the app would verify it with in
 * `env`: AUTH_JWT_SECRET, or the development secret in the current directory
 * (made now if the app has not made it yet). Issuer and audience as configured.
 */
export async function issueToken(
  request: TokenRequest,
  env: Record<string, string | undefined>,
): Promise<string> {
  const auth = loadAuthConfig(env);
  if (auth.mode === 'disabled')
    throw new ConfigError(
      'AUTH_DISABLED',
      'is true: the orders API takes no token, so none is made',
    );
  if (auth.mode === 'jwks')
    throw new ConfigError(
      'AUTH_JWKS_URL',
      'is set: tokens come from your identity provider, whose keys sign them; this script signs only with AUTH_JWT_SECRET or the development secret',
    );
  const secret = auth.mode === 'secret' ? auth.secret : loadOrCreateDevSecret().secret;
  const jwt = new SignJWT(request.admin ? { roles: [ADMIN_ROLE] } : {})
    .setProtectedHeader({ alg: SECRET_ALGORITHMS[0], typ: 'JWT' })
    .setSubject(request.userId)
    .setIssuedAt()
    .setExpirationTime(request.expires);
  if (auth.issuer) jwt.setIssuer(auth.issuer);
  if (auth.audience) jwt.setAudience(auth.audience);
  return jwt.sign(new TextEncoder().encode(secret.reveal()));
}
