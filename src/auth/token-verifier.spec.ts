import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT } from 'jose';
import { Secret } from '../config/auth-config.js';
import { InvalidTokenError, KeysUnavailableError, TokenVerifier } from './token-verifier.js';

const SECRET = '9c1e4b7a2d5f8c0e3a6b9d1f4c7e0a2b';
const sign = (claims: Record<string, unknown>, secret = SECRET) =>
  new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(secret));
const inAnHour = () => Math.floor(Date.now() / 1000) + 3600;

describe('TokenVerifier', () => {
  const verifier = new TokenVerifier({ mode: 'secret', secret: new Secret(SECRET) });

  it("returns the token's user, an admin when roles holds admin", async () => {
    await expect(verifier.verify(await sign({ sub: 'ann', exp: inAnHour() }))).resolves.toEqual({
      userId: 'ann',
      admin: false,
    });
    const admin = await sign({ sub: 'ops', exp: inAnHour(), roles: ['reader', 'admin'] });
    await expect(verifier.verify(admin)).resolves.toEqual({ userId: 'ops', admin: true });
  });

  it('checks issuer and audience when they are configured', async () => {
    const strict = new TokenVerifier({
      mode: 'secret',
      secret: new Secret(SECRET),
      issuer: 'me',
      audience: 'orders',
    });
    const token = await sign({ sub: 'ann', exp: inAnHour(), iss: 'me', aud: 'orders' });
    await expect(strict.verify(token)).resolves.toMatchObject({ userId: 'ann' });
    const other = await sign({ sub: 'ann', exp: inAnHour(), iss: 'me', aud: 'billing' });
    await expect(strict.verify(other)).rejects.toThrow(/aud claim is not accepted/);
    await expect(strict.verify(other)).rejects.toBeInstanceOf(InvalidTokenError);
  });

  it("says the identity provider's keys are out of reach (a 503) rather than blame the token", async () => {
    // A port that was just free: nothing answers there.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    const remote = new TokenVerifier({
      mode: 'jwks',
      jwksUrl: `http://127.0.0.1:${port}/jwks.json`,
      issuer: 'https://idp.test/',
      audience: 'orders',
    });
    // Its signature is never checked: the keys to check it with cannot be fetched.
    const header = Buffer.from(JSON.stringify({ alg: 'ES256', kid: 'k1' })).toString('base64url');
    const payload = Buffer.from(JSON.stringify({ sub: 'ann', exp: inAnHour() })).toString(
      'base64url',
    );
    await expect(remote.verify(`${header}.${payload}.${'A'.repeat(86)}`)).rejects.toBeInstanceOf(
      KeysUnavailableError,
    );
  });

  it('refuses to verify anything when tokens are off', async () => {
    const off = new TokenVerifier({ mode: 'disabled' });
    expect(off.disabled).toBe(true);
    await expect(off.verify('x')).rejects.toThrow(/AUTH_DISABLED=true/);
  });
});
