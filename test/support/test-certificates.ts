import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Files of a throwaway certificate authority and a server certificate it signed. */
export interface TestCertificates {
  /** The CA's certificate: what a client trusts (sslrootcert). */
  ca: string;
  /** Another CA's certificate, which signed nothing here. */
  otherCa: string;
  /** For CN=localhost, with localhost and 127.0.0.1 as alternative names. */
  serverCert: string;
  /** The server's key, readable by the postgres user only (Postgres refuses it otherwise). */
  serverKey: string;
  dir: string;
  destroy(): void;
}

/** Why no certificates can be made here, if so. */
export function missingOpenssl(): string | undefined {
  return spawnSync('openssl', ['version']).status === 0 ? undefined : 'openssl is not installed';
}

/** Runs `openssl` with `command`, split at spaces (no argument here has one). */
function openssl(cwd: string, command: string): void {
  const result = spawnSync('openssl', command.split(' '), {
    cwd,
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (result.status !== 0) throw new Error(`openssl ${command} failed: ${result.stderr}`);
}

/** The postgres user's ids, when this runs as root (a cluster runs as postgres). */
function postgresIds(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) =>
    Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout);
  return { uid: id('-u'), gid: id('-g') };
}

/** Made with `openssl` at test time (P-256 keys, valid two days), in a temporary folder. */
export function makeTestCertificates(): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'nest-delay-tls-'));
  chmodSync(dir, 0o755);
  const ec = '-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes';
  const ca =
    '-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign';
  openssl(
    dir,
    `req -x509 -days 2 ${ec} -subj /CN=nest-delay-test-CA -keyout ca.key -out ca.crt ${ca}`,
  );
  openssl(
    dir,
    `req -x509 -days 2 ${ec} -subj /CN=other-CA -keyout other-ca.key -out other-ca.crt ${ca}`,
  );
  openssl(dir, `req -new ${ec} -subj /CN=localhost -keyout server.key -out server.csr`);
  writeFileSync(
    join(dir, 'server.ext'),
    'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n',
  );
  openssl(
    dir,
    'x509 -req -in server.csr -CA ca.crt -CAkey ca.key -set_serial 1 -days 2 -extfile server.ext -out server.crt',
  );
  const serverKey = join(dir, 'server.key');
  const ids = postgresIds();
  if (ids) chownSync(serverKey, ids.uid, ids.gid);
  chmodSync(serverKey, 0o600);
  for (const cert of ['ca.crt', 'other-ca.crt', 'server.crt']) chmodSync(join(dir, cert), 0o644);
  return {
    ca: join(dir, 'ca.crt'),
    otherCa: join(dir, 'other-ca.crt'),
    serverCert: join(dir, 'server.crt'),
    serverKey,
    dir,
    destroy: () => rmSync(dir, { recursive: true, force: true }),
  };
}
