import { Secret } from '../config/auth-config.js';
import { issueToken, parseTokenArgs } from './issue-token.js';
import { TokenVerifier } from './token-verifier.js';

const SECRET = '5e8b1d4a7c0f3e6b9d2a5c8f1e4b7d0a';

describe('npm run token', () => {
  it('reads a userId, --admin and --expires', () => {
    expect(parseTokenArgs(['u-42'])).toEqual({ userId: 'u-42', admin: false, expires: '1h' });
    expect(parseTokenArgs(['--admin', 'ops', '--expires', '7d'])).toEqual({
      userId: 'ops',
      admin: true,
      expires: '7d',
    });
    expect(parseTokenArgs([])).toEqual(new Error('a userId is required'));
    expect(parseTokenArgs(['a', 'b'])).toEqual(new Error('one userId only; got "a" and "b"'));
    expect(parseTokenArgs(['a', '--expires', 'soon'])).toEqual(
      new Error('--expires takes a duration such as 30m, 1h or 7d; got "soon"'),
    );
    expect(parseTokenArgs(['a', '--root'])).toEqual(new Error('unknown option --root'));
    expect(parseTokenArgs(['x'.repeat(65)])).toEqual(
      new Error('userId must be 1 to 64 characters; got 65'),
    );
  });

  it('signs a token the app verifies with the same settings, with issuer and audience', async () => {
    const env = { AUTH_JWT_SECRET: SECRET, AUTH_ISSUER: 'me', AUTH_AUDIENCE: 'orders' };
    const token = await issueToken({ userId: 'ops', admin: true, expires: '1h' }, env);
    const verifier = new TokenVerifier({
      mode: 'secret',
      secret: new Secret(SECRET),
      issuer: 'me',
      audience: 'orders',
    });
    await expect(verifier.verify(token)).resolves.toEqual({ userId: 'ops', admin: true });
    const plain = await issueToken({ userId: 'ann', admin: false, expires: '1h' }, env);
    await expect(verifier.verify(plain)).resolves.toEqual({ userId: 'ann', admin: false });
  });

  it('makes no token where the app takes none, or takes the identity provider’s', async () => {
    const request = { userId: 'ann', admin: false, expires: '1h' };
    await expect(issueToken(request, { AUTH_DISABLED: 'true' })).rejects.toThrow(
      /^Invalid configuration: AUTH_DISABLED is true: the orders API takes no token/,
    );
    await expect(
      issueToken(request, {
        AUTH_JWKS_URL: 'https://idp.example.com/jwks',
        AUTH_ISSUER: 'i',
        AUTH_AUDIENCE: 'a',
      }),
    ).rejects.toThrow(
      /^Invalid configuration: AUTH_JWKS_URL is set: tokens come from your identity provider/,
    );
  });
});
