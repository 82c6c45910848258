/**
 * Throwaway certificates for TLS tests, made with openssl in a temporary directory: a CA, a server
 * certificate for 127.0.0.1 and localhost, and a client certificate, both signed by the CA. Without
 * openssl, `certificatesOrSkip` skips the suite with a line saying why — never a silent pass.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Certificates {
  readonly dir: string;
  /** The CA's certificate (PEM). */
  readonly ca: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
  /** Removes the directory. */
  remove(): void;
}

/** In a mocha `before`: the certificates, or `this.skip()` with a visible line when openssl is missing. */
export function certificatesOrSkip(context: Mocha.Context, suite: string): Certificates {
  if (spawnSync('openssl', ['version'], { stdio: 'ignore' }).status !== 0) {
    console.log(`      [skipped] ${suite}: openssl is not installed (it makes the test's CA and certificates)`);
    context.skip();
  }
  return makeCertificates();
}

function makeCertificates(): Certificates {
  const dir = mkdtempSync(join(tmpdir(), 'slotwise-tls-'));
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=slotwise test CA');
  for (const [name, extension] of [
    ['server', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth'],
    ['client', 'extendedKeyUsage=clientAuth'],
  ] as const) {
    writeFileSync(join(dir, `${name}.ext`), `${extension}\n`);
    openssl('req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=slotwise ${name}`);
    openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '1',
      '-extfile',
      `${name}.ext`,
    );
  }
  return {
    dir,
    ca: join(dir, 'ca.pem'),
    serverCert: join(dir, 'server.pem'),
    serverKey: join(dir, 'server.key'),
    clientCert: join(dir, 'client.pem'),
    clientKey: join(dir, 'client.key'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
