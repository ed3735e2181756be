import { Logger, Module, type DynamicModule } from '@nestjs/common';
import type { AuthConfig } from '../config/auth-config.js';
import { DEV_AUTH_SECRET_FILE, loadOrCreateDevSecret } from './dev-auth-secret.js';
import { TokenVerifier, withDevSecret } from './token-verifier.js';
import { UserAuthGuard } from './user-auth.guard.js';

/**
 * The users' tokens: a TokenVerifier built from AUTH_* (checking
 * nothing with AUTH_DISABLED=true) and the guard that uses it. Says at boot how tokens
 * are checked, and warns at every boot that they are not when disabled.
 */
@Module({})
export class AuthModule {
  static register(auth: AuthConfig, devSecretFile = DEV_AUTH_SECRET_FILE): DynamicModule {
    return {
      module: AuthModule,
      providers: [
        { provide: TokenVerifier, useFactory: () => createVerifier(auth, devSecretFile) },
        UserAuthGuard,
      ],
      exports: [TokenVerifier, UserAuthGuard],
    };
  }
}

function createVerifier(auth: AuthConfig, devSecretFile: string): TokenVerifier {
  const logger = new Logger('Auth');
  const resolved = withDevSecret(auth, () => {
    const { secret, created } = loadOrCreateDevSecret(devSecretFile);
    logger.log(
      `AUTH_JWT_SECRET is not set: users' tokens are HS256 with the development secret ${created ? 'just made in' : 'in'} ${devSecretFile}. ` +
        'Get one with `npm run -s token -- <userId> [--admin]`, send it as `Authorization: Bearer <token>`',
    );
    return secret;
  });
  switch (resolved.mode) {
    case 'disabled':
      logger.warn(
        "AUTH_DISABLED=true: the orders API checks no token. Every caller sees and acts on every order, and names the order's userId in the body of POST /orders",
      );
      break;
    case 'jwks':
      logger.log(
        `Users' tokens: verified with the keys at ${resolved.jwksUrl}, issuer ${resolved.issuer}, audience ${resolved.audience}`,
      );
      break;
    case 'secret':
      if (auth.mode === 'secret') logger.log("Users' tokens: HS256 with AUTH_JWT_SECRET");
      break;
  }
  return new TokenVerifier(resolved);
}
