import { inspect } from 'node:util';
import { loadConfig } from './app-config.js';
import { loadAuthConfig, Secret } from './auth-config.js';

const SECRET = '3f9a61c0d2b84e7f9a61c0d2b84e7f00';

describe('loadAuthConfig', () => {
  it('verifies with AUTH_JWT_SECRET, checking issuer and audience only when they are set', () => {
    const auth = loadAuthConfig({ AUTH_JWT_SECRET: SECRET });
    expect(auth).toMatchObject({ mode: 'secret' });
    expect(auth.mode === 'secret' && auth.secret.reveal()).toBe(SECRET);
    expect(auth).not.toHaveProperty('issuer');
    expect(
      loadAuthConfig({ AUTH_JWT_SECRET: SECRET, AUTH_ISSUER: 'me', AUTH_AUDIENCE: 'orders' }),
    ).toMatchObject({ mode: 'secret', issuer: 'me', audience: 'orders' });
  });

  it("verifies with an identity provider's keys, which need an issuer and an audience", () => {
    const jwks = {
      AUTH_JWKS_URL: 'https://idp.example.com/.well-known/jwks.json',
      AUTH_ISSUER: 'https://idp.example.com/',
      AUTH_AUDIENCE: 'orders-api',
    };
    expect(loadAuthConfig(jwks)).toEqual({
      mode: 'jwks',
      jwksUrl: jwks.AUTH_JWKS_URL,
      issuer: jwks.AUTH_ISSUER,
      audience: jwks.AUTH_AUDIENCE,
    });
    expect(() => loadAuthConfig({ ...jwks, AUTH_ISSUER: '' })).toThrow(
      /^Invalid configuration: AUTH_ISSUER must be set with AUTH_JWKS_URL/,
    );
    expect(() => loadAuthConfig({ ...jwks, AUTH_AUDIENCE: undefined })).toThrow(
      /^Invalid configuration: AUTH_AUDIENCE must be set with AUTH_JWKS_URL/,
    );
    // Keys over plain HTTP only from this machine.
    expect(() => loadAuthConfig({ ...jwks, AUTH_JWKS_URL: 'http://idp.example.com/jwks' })).toThrow(
      /^Invalid configuration: AUTH_JWKS_URL must be an https:\/\/ URL/,
    );
    expect(loadAuthConfig({ ...jwks, AUTH_JWKS_URL: 'http://127.0.0.1:8080/jwks' })).toMatchObject({
      mode: 'jwks',
    });
    expect(() => loadAuthConfig({ ...jwks, AUTH_JWKS_URL: 'idp/jwks' })).toThrow(
      /^Invalid configuration: AUTH_JWKS_URL must be a URL/,
    );
    expect(() => loadAuthConfig({ ...jwks, AUTH_JWT_SECRET: SECRET })).toThrow(
      /^Invalid configuration: AUTH_JWT_SECRET and AUTH_JWKS_URL are both set/,
    );
  });

  it('uses the development secret outside production, and refuses to start in production without users', () => {
    expect(loadAuthConfig({})).toEqual({ mode: 'dev-secret' });
    expect(loadAuthConfig({ NODE_ENV: 'test' })).toEqual({ mode: 'dev-secret' });
    const refused = () => loadAuthConfig({ NODE_ENV: 'production' });
    expect(refused).toThrow(
      /^Invalid configuration: AUTH_JWT_SECRET or AUTH_JWKS_URL must be set with NODE_ENV=production: .*AUTH_ISSUER and AUTH_AUDIENCE.*AUTH_DISABLED=true/,
    );
    expect(() => loadConfig({ NODE_ENV: 'production', NOTIFICATION_PROVIDER: 'fake' })).toThrow(
      /AUTH_JWT_SECRET or AUTH_JWKS_URL must be set/,
    );
  });

  it('turns tokens off only when AUTH_DISABLED says so, alone', () => {
    expect(loadAuthConfig({ NODE_ENV: 'production', AUTH_DISABLED: 'true' })).toEqual({
      mode: 'disabled',
    });
    expect(loadAuthConfig({ AUTH_DISABLED: 'false', AUTH_JWT_SECRET: SECRET }).mode).toBe('secret');
    expect(() => loadAuthConfig({ AUTH_DISABLED: 'please' })).toThrow(
      /^Invalid configuration: AUTH_DISABLED must be true or false; got "please"/,
    );
    expect(() => loadAuthConfig({ AUTH_DISABLED: 'true', AUTH_JWT_SECRET: SECRET })).toThrow(
      /^Invalid configuration: AUTH_DISABLED is true while AUTH_JWT_SECRET is set/,
    );
  });

  it.each([
    [
      'short',
      'sh0rt-secret',
      /must be 32 to 1000 printable ASCII characters .*got 12 character\(s\)$/,
    ],
    ['with spaces', `${SECRET} ${SECRET}`, /without spaces/],
    ['guessable', 'ab'.repeat(20), /too weak: 2 distinct character\(s\)/],
  ])('refuses a %s AUTH_JWT_SECRET without printing it', (_name, secret, says) => {
    const load = () => loadAuthConfig({ AUTH_JWT_SECRET: secret });
    expect(load).toThrow(/^Invalid configuration: AUTH_JWT_SECRET /);
    expect(load).toThrow(says);
    expect(load).not.toThrow(secret);
  });

  it('never shows the secret when the config is printed, logged as JSON or inspected', () => {
    const config = loadConfig({ AUTH_JWT_SECRET: SECRET });
    expect(JSON.stringify(config)).not.toContain(SECRET);
    expect(inspect(config, { depth: 10 })).not.toContain(SECRET);
    expect(`${new Secret(SECRET)}`).toBe('[secret]');
  });
});
