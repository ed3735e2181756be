import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadOrCreateDevSecret } from './dev-auth-secret.js';

describe('the development secret', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dev-auth-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is made once, readable by its owner only, and read back the same afterwards', () => {
    const file = join(dir, '.data', 'dev-auth-secret');
    const first = loadOrCreateDevSecret(file);
    expect(first.created).toBe(true);
    expect(first.secret.reveal()).toMatch(/^[0-9a-f]{64}$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const again = loadOrCreateDevSecret(file);
    expect(again).toMatchObject({ created: false });
    expect(again.secret.reveal()).toBe(first.secret.reveal());
  });

  it('refuses a file that holds no usable secret, naming the file and not its content', () => {
    const file = join(dir, 'broken');
    writeFileSync(file, 'hunter2\n');
    expect(() => loadOrCreateDevSecret(file)).toThrow(
      new RegExp(
        `^Invalid configuration: AUTH_JWT_SECRET is not set, and the development secret in ${file} is not usable`,
      ),
    );
    expect(() => loadOrCreateDevSecret(file)).not.toThrow('hunter2');
    expect(readFileSync(file, 'utf8')).toBe('hunter2\n');
  });
});
