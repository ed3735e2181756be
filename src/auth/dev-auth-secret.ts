import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { checkSecret, type Secret } from '../config/auth-config.js';
import { ConfigError } from '../config/config-error.js';

/** Where `npm start` keeps the secret it signs development tokens with (gitignored, as all of `.data/`). */
export const DEV_AUTH_SECRET_FILE = '.data/dev-auth-secret';

/**
 * The development secret: read from `file`, or made (32 random bytes, hex)
 * and written there readable by its owner only, the first time. Two
 * processes starting together agree: the file is created exclusively, and
 * the one that loses the race reads the winner's.
 */
export function loadOrCreateDevSecret(file: string = DEV_AUTH_SECRET_FILE): {
  secret: Secret;
  created: boolean;
} {
  mkdirSync(dirname(file), { recursive: true });
  let created = false;
  try {
    writeFileSync(file, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
    created = true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const text = readFileSync(file, 'utf8').trim();
  try {
    return { secret: checkSecret(text), created };
  } catch {
    throw new ConfigError(
      'AUTH_JWT_SECRET',
      `is not set, and the development secret in ${file} is not usable (${text.length} character(s)): delete the file and a new one is made at the next start`,
    );
  }
}
