// Certificates made for one test with openssl: a CA, a server certificate it signed for
// 127.0.0.1 only (so 127.0.0.2, the same loopback, is a wrong host name), and a second,
// unrelated CA (the wrong CA). Removed at teardown.
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { PrivatePostgres } from '../faults/helpers.js';

const run = promisify(execFile);

interface TapLike {
  teardown(fn: () => unknown): void;
}

export interface TestCertificates {
  dir: string;
  /** The CA that signed `cert`. */
  ca: string;
  /** A CA that signed nothing here. */
  otherCa: string;
  /** The server's certificate (subjectAltName IP:127.0.0.1) and its key. */
  cert: string;
  key: string;
}

async function selfSignedCa(dir: string, name: string): Promise<{ crt: string; key: string }> {
  const crt = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  await run('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-keyout', key, '-out', crt, '-days', '2', '-subj', `/CN=${name}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return { crt, key };
}

export async function makeCertificates(t: TapLike): Promise<TestCertificates> {
  const dir = mkdtempSync(join(tmpdir(), 'vault-tls-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const ca = await selfSignedCa(dir, 'test-ca');
  const other = await selfSignedCa(dir, 'other-ca');
  const key = join(dir, 'server.key');
  const csr = join(dir, 'server.csr');
  const cert = join(dir, 'server.crt');
  const ext = join(dir, 'server.ext');
  writeFileSync(ext, 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n');
  await run('openssl', ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', csr, '-subj', '/CN=127.0.0.1']);
  await run('openssl', ['x509', '-req', '-in', csr, '-CA', ca.crt, '-CAkey', ca.key, '-CAcreateserial', '-out', cert, '-days', '2', '-extfile', ext]);
  return { dir, ca: ca.crt, otherCa: other.crt, cert, key };
}

/**
 * Another server certificate (for 127.0.0.1, or `subjectAltName`) signed by `certs`' CA (a rotation's new pair),
 * written to `<dir>/<name>.crt` and `<name>.key`; returns the paths.
 */
export async function issueServerCertificate(certs: TestCertificates, name: string, subjectAltName = 'IP:127.0.0.1'): Promise<{ cert: string; key: string }> {
  const key = join(certs.dir, `${name}.key`);
  const csr = join(certs.dir, `${name}.csr`);
  const cert = join(certs.dir, `${name}.crt`);
  const ext = join(certs.dir, `${name}.ext`);
  writeFileSync(ext, `subjectAltName=${subjectAltName}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n`);
  await run('openssl', ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', csr, '-subj', '/CN=127.0.0.1']);
  await run('openssl', ['x509', '-req', '-in', csr, '-CA', join(certs.dir, 'test-ca.crt'), '-CAkey', join(certs.dir, 'test-ca.key'), '-CAcreateserial', '-out', cert, '-days', '2', '-extfile', ext]);
  return { cert, key };
}

export interface TlsRedis {
  port: number;
  pid: number;
  /** rediss:// to 127.0.0.1 (the name in the certificate), no password in it. */
  url: string;
}

/**
 * A redis-server of the test's own speaking TLS only (port 0, tls-port), its password
 * read from a config file (`requirepass`), as the chart starts the bundled Redis: the
 * password is never an argument. Killed at teardown.
 */
export async function startTlsRedis(t: TapLike, certs: TestCertificates, password: string, port: number): Promise<TlsRedis> {
  const conf = join(certs.dir, `redis-${port}.conf`);
  writeFileSync(conf, `requirepass ${password}\n`, { mode: 0o600 });
  const child = spawn(
    'redis-server',
    [conf, '--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1', '127.0.0.2',
      '--tls-cert-file', certs.cert, '--tls-key-file', certs.key, '--tls-ca-cert-file', certs.ca, '--tls-auth-clients', 'no',
      '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const exited = new Promise((resolve) => child.once('exit', resolve));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (/Ready to accept connections/.test(out)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${out}`)));
  });
  return { port, pid: child.pid!, url: `rediss://127.0.0.1:${port}` };
}

/**
 * A private PostgreSQL cluster with ssl=on and `certs`' server certificate, listening on
 * 127.0.0.1 (the certificate's name) and 127.0.0.2 (the same server under a wrong name).
 */
export function startTlsPostgres(t: TapLike, certs: TestCertificates): Promise<PrivatePostgres> {
  return PrivatePostgres.create(t, {
    options: '-c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key -c listen_addresses=127.0.0.1,127.0.0.2',
    prepare: (pg) => {
      for (const [from, to, mode] of [[certs.cert, 'server.crt', 0o644], [certs.key, 'server.key', 0o600]] as const) {
        const path = join(pg.data, to);
        writeFileSync(path, readFileSync(from), { mode });
        pg.own(path);
      }
      writeFileSync(join(pg.data, 'pg_hba.conf'), 'local all all trust\nhost all all 127.0.0.0/8 trust\n');
    },
  });
}
