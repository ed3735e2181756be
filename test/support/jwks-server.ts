import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

/** A stand-in identity provider: its signing key, and its public keys served as a JWKS over local HTTP. */
export interface TestIdentityProvider {
  /** http://127.0.0.1:<port>/.well-known/jwks.json */
  jwksUrl: string;
  issuer: string;
  audience: string;
  /** The public key it publishes (kid `k1`, ES256), as a JWK. */
  publicJwk: JWK;
  /** How many times the key set was fetched. */
  fetches(): number;
  /** A token signed with its ES256 key; `claims` add to or override sub, iss, aud, exp. */
  sign(
    sub: string,
    claims?: Record<string, unknown>,
    header?: Record<string, unknown>,
  ): Promise<string>;
  close(): Promise<void>;
}

export const TEST_ISSUER = 'https://idp.test/';
export const TEST_AUDIENCE = 'orders-api';

export async function startIdentityProvider(): Promise<TestIdentityProvider> {
  const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  let fetches = 0;
  const server: Server = createServer((req, res) => {
    if (req.url !== '/.well-known/jwks.json') {
      res.writeHead(404).end();
      return;
    }
    fetches++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ keys: [publicJwk] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    jwksUrl: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    issuer: TEST_ISSUER,
    audience: TEST_AUDIENCE,
    publicJwk,
    fetches: () => fetches,
    sign: (sub, claims = {}, header = {}) => signEs256(privateKey, sub, claims, header),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** An ES256 token with this provider's issuer and audience, valid for an hour unless `claims` say otherwise. */
export async function signEs256(
  key: CryptoKey,
  sub: string,
  claims: Record<string, unknown>,
  header: Record<string, unknown>,
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    sub,
    iss: TEST_ISSUER,
    aud: TEST_AUDIENCE,
    iat: now,
    exp: now + 3600,
    ...claims,
  })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'JWT', ...header })
    .sign(key);
}

/** A key pair the provider does not publish: its tokens must not verify. */
export async function strangerKey(): Promise<CryptoKey> {
  return (await generateKeyPair('ES256')).privateKey;
}
