// SoftHSM2 tokens for the tests: one token directory per test process (the library
// reads SOFTHSM2_CONF once, at its first C_Initialize), one fresh token per call,
// each with its own label, PIN and root key (made with hsm-init's function).
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type * as P from 'pkcs11js';
import { initPkcs11RootKey } from '../../crypto/index.js';

export const SOFTHSM_MODULE = process.env.TEST_PKCS11_MODULE ?? '/usr/lib/softhsm/libsofthsm2.so';

interface TapLike {
  teardown(fn: () => unknown): void;
  skip?(...args: unknown[]): unknown;
}

/** True when SoftHSM2 is installed. In CI (.ci/run installs it) its absence is a failure, not a skip. */
export function softhsmAvailable(): boolean {
  const present = existsSync(SOFTHSM_MODULE);
  if (!present && process.env.CI) throw new Error(`SoftHSM2 is missing (${SOFTHSM_MODULE}); .ci/run installs it with apt-get install softhsm2`);
  return present;
}

let tokenDir: string | undefined;

function conf(): string {
  if (tokenDir === undefined) {
    const root = mkdtempSync(join(tmpdir(), 'vault-softhsm-'));
    tokenDir = join(root, 'tokens');
    mkdirSync(tokenDir, { recursive: true });
    const file = join(root, 'softhsm2.conf');
    writeFileSync(file, `directories.tokendir = ${tokenDir}\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n`);
    // Process-wide: the library (loaded in the crypto workers) reads the real environment.
    process.env.SOFTHSM2_CONF = file;
    process.once('exit', () => rmSync(root, { recursive: true, force: true }));
  }
  return process.env.SOFTHSM2_CONF!;
}

export interface SoftToken {
  module: string;
  tokenLabel: string;
  keyLabel: string;
  pin: string;
  /** A file holding the PIN (and a trailing newline, as editors leave it). */
  pinFile: string;
  /** The service's settings for this token. */
  env: Record<string, string>;
  /** Makes the token disappear, as an unplugged HSM would (its files move away). */
  remove(): void;
  /** Puts it back. */
  restore(): void;
}

/** A fresh token with a root key (unless `withKey: false`). */
export function softToken(t: TapLike, opts: { withKey?: boolean; keyLabel?: string } = {}): SoftToken {
  const confFile = conf();
  const tokenLabel = `vs-${randomBytes(4).toString('hex')}`;
  const pin = randomBytes(6).toString('hex');
  const before = new Set(readdirSync(tokenDir!));
  initToken(confFile, tokenLabel, pin);
  const dir = readdirSync(tokenDir!).find((d) => !before.has(d));
  if (!dir) throw new Error('softhsm2-util made no token directory');
  const keyLabel = opts.keyLabel ?? 'vault-root';
  if (opts.withKey !== false) {
    initPkcs11RootKey({ module: SOFTHSM_MODULE, tokenLabel, keyLabel }, Buffer.from(pin));
  }
  const pinFile = join(tokenDir!, '..', `${tokenLabel}.pin`);
  writeFileSync(pinFile, `${pin}\n`, { mode: 0o600 });
  const here = join(tokenDir!, dir);
  const away = join(tokenDir!, '..', `removed-${dir}`);
  t.teardown(() => rmSync(pinFile, { force: true }));
  return {
    module: SOFTHSM_MODULE,
    tokenLabel,
    keyLabel,
    pin,
    pinFile,
    env: {
      KEY_PROVIDER: 'pkcs11',
      PKCS11_MODULE: SOFTHSM_MODULE,
      PKCS11_TOKEN_LABEL: tokenLabel,
      PKCS11_PIN_FILE: pinFile,
      PKCS11_KEY_LABEL: keyLabel,
    },
    remove: () => renameSync(here, away),
    restore: () => renameSync(away, here),
  };
}

// In this process, through PKCS#11 (C_InitToken on the free slot, then C_InitPIN):
// SoftHSM2 does not see tokens another process (softhsm2-util) makes after its
// C_Initialize, and the library is initialised once per process.
function initToken(confFile: string, label: string, pin: string): void {
  void confFile;
  const lib = createRequire(import.meta.url)('pkcs11js') as typeof P;
  const m = new lib.PKCS11();
  m.load(SOFTHSM_MODULE);
  try {
    m.C_Initialize({ flags: lib.CKF_OS_LOCKING_OK });
  } catch (err) {
    if ((err as { code?: number }).code !== 0x191) throw err;
  }
  const free = m.C_GetSlotList(false).find((s) => {
    const info = m.C_GetTokenInfo(s);
    return (info.flags & lib.CKF_TOKEN_INITIALIZED) === 0;
  });
  if (!free) throw new Error('SoftHSM2 has no free slot');
  const so = `so-${pin}`;
  m.C_InitToken(free, so, label.padEnd(32, ' ')); // blank-padded, as PKCS#11 labels are
  const slot = m.C_GetSlotList(true).find((s) => m.C_GetTokenInfo(s).label.trim() === label)!;
  const session = m.C_OpenSession(slot, lib.CKF_SERIAL_SESSION | lib.CKF_RW_SESSION);
  m.C_Login(session, lib.CKU_SO, so);
  m.C_InitPIN(session, pin);
  m.C_Logout(session);
  m.C_CloseSession(session);
}
