// TLS on the service's own port: the certificate/key pair checked before uWS sees it (uWS
// only says "App construction failed"), the uWS options (TLS 1.2+ only: this uWS build's
// uSockets refuses TLS 1.0/1.1 itself; modern ECDHE AEAD suites for TLS 1.2; TLS 1.3's
// suites are BoringSSL's fixed, all-AEAD set), and a watcher that notices when the files
// change (cert-manager / a Kubernetes Secret swap the files under a mounted directory).
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, watch, writeFileSync, type FSWatcher } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createSecureContext } from 'node:tls';

/** TLS 1.2 suites (Mozilla "intermediate", ECDHE + AEAD only; no CBC, no RSA key exchange). */
export const TLS12_CIPHERS = [
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

export interface TlsPairInfo {
  /** The DNS names of the certificate's subjectAltName, lower-cased (wildcards kept). */
  dnsNames: string[];
  /** The leaf certificate's serial number (hex, as node prints it). */
  serial: string;
  subject: string;
  validTo: string;
}

export class TlsPairError extends Error {
  override readonly name = 'TlsPairError';
}

/**
 * Reads and checks the pair (PEM, the key matches the certificate, the certificate is
 * within its validity). Throws TlsPairError with one line naming the problem; never quotes
 * the key.
 */
export function checkTlsPair(files: TlsFiles, now = new Date()): TlsPairInfo {
  return readTlsPair(files, now).info;
}

/** The pair's bytes as read once and checked (see checkTlsPair). */
export interface TlsPair {
  cert: Buffer;
  key: Buffer;
  info: TlsPairInfo;
}

export function readTlsPair(files: TlsFiles, now = new Date()): TlsPair {
  const read = (setting: string, path: string): Buffer => {
    try {
      return readFileSync(path);
    } catch (err) {
      throw new TlsPairError(`${setting}: cannot read ${path} (${(err as { code?: string }).code ?? 'error'})`);
    }
  };
  const cert = read('TLS_CERT_FILE', files.certFile);
  const key = read('TLS_KEY_FILE', files.keyFile);
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(cert);
  } catch {
    throw new TlsPairError(`TLS_CERT_FILE: ${files.certFile} holds no PEM certificate`);
  }
  try {
    createSecureContext({ cert, key });
  } catch (err) {
    const code = (err as { code?: string }).code ?? '';
    throw new TlsPairError(
      /KEY_VALUES_MISMATCH/.test(code)
        ? `TLS_KEY_FILE: ${files.keyFile} is not the key of the certificate in ${files.certFile}`
        : `TLS_KEY_FILE: ${files.keyFile} holds no usable PEM private key (unencrypted) for ${files.certFile}`,
    );
  }
  if (new Date(leaf.validTo).getTime() < now.getTime()) {
    throw new TlsPairError(`TLS_CERT_FILE: the certificate in ${files.certFile} expired on ${leaf.validTo}`);
  }
  const dnsNames = (leaf.subjectAltName ?? '')
    .split(', ')
    .filter((n) => n.startsWith('DNS:'))
    .map((n) => n.slice(4).toLowerCase());
  return { cert, key, info: { dnsNames, serial: leaf.serialNumber, subject: leaf.subject.replace(/\n/g, ', '), validTo: leaf.validTo } };
}

/**
 * Runs `fn` with the checked bytes written to files of this process's own (mode 0600 in a
 * fresh 0700 directory, removed afterwards): uWS reads the files it is given, and reading
 * the mounted ones again could see a half-rotated pair, on which this uWS build crashes.
 */
export function withPrivateCopy<T>(pair: TlsPair, fn: (files: TlsFiles) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'vault-tls-'));
  try {
    const files = { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') };
    writeFileSync(files.certFile, pair.cert, { mode: 0o600 });
    writeFileSync(files.keyFile, pair.key, { mode: 0o600 });
    return fn(files);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** uWS SSLApp options for the pair. */
export function uwsTlsOptions(files: TlsFiles): Record<string, string | number | boolean> {
  return {
    cert_file_name: files.certFile,
    key_file_name: files.keyFile,
    ssl_ciphers: TLS12_CIPHERS,
    // Idle connections give their TLS buffers back.
    ssl_prefer_low_memory_usage: true,
  };
}

/**
 * Calls `onChange` (not reentrantly) when either file's content may have changed: fs.watch
 * on both files' directories (a Kubernetes Secret volume swaps a `..data` symlink there)
 * plus a stat of both files every `pollMs` (watch events are lost on some file systems).
 * Returns a stop function.
 */
export function watchTlsFiles(files: TlsFiles, onChange: () => Promise<void> | void, pollMs = 30_000): () => void {
  const stamp = (): string =>
    [files.certFile, files.keyFile]
      .map((p) => {
        try {
          const s = statSync(p);
          return `${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
        } catch {
          return 'missing';
        }
      })
      .join('|');
  let last = stamp();
  let running = false;
  let again = false;
  let stopped = false;
  const check = async (): Promise<void> => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        const now = stamp();
        if (now !== last) {
          last = now;
          await onChange();
        }
      } while (again && !stopped);
    } finally {
      running = false;
    }
  };
  const fire = () => void check().catch(() => undefined);
  const watchers: FSWatcher[] = [];
  for (const dir of new Set([dirname(files.certFile), dirname(files.keyFile)])) {
    try {
      const w = watch(dir, { persistent: false }, fire);
      w.on('error', () => undefined);
      watchers.push(w);
    } catch {
      // The poll still sees changes.
    }
  }
  const timer = setInterval(fire, pollMs);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
    for (const w of watchers) w.close();
  };
}
