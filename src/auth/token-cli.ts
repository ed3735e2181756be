// `npm run -s token -- <userId> [--admin] [--expires 1h]`: prints a bearer token
// for the orders API, signed the way the app started from the same directory and
// environment verifies it (AUTH_JWT_SECRET, else the development secret).
import { ConfigError } from '../config/config-error.js';
import { issueToken, parseTokenArgs, TOKEN_USAGE } from './issue-token.js';

async function main(): Promise<number> {
  const request = parseTokenArgs(process.argv.slice(2));
  if (request instanceof Error) {
    console.error(`${request.message}\n${TOKEN_USAGE}`);
    return 2;
  }
  try {
    console.log(await issueToken(request, process.env));
    return 0;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    return 1;
  }
}

main().then((code) => (process.exitCode = code));
