// A root key that never leaves a PKCS#11 token (an HSM, a smart card, a cloud KMS's
// PKCS#11 library; SoftHSM2 in the tests). Data keys are wrapped by the token with
// CKM_AES_GCM: the same blob format and the same associated data as the local
// provider (header || utf8(aad)), the IV chosen here (12 random bytes) and passed in
// CK_GCM_PARAMS. The token's key is AES-256, CKA_SENSITIVE, not CKA_EXTRACTABLE.
//
// pkcs11js is an optional dependency (a native addon): loaded only when a PKCS#11 key
// is configured, so the local provider works where it could not be built.
import { randomFillSync } from 'node:crypto';
import { createRequire } from 'node:module';
import type * as P from 'pkcs11js';
import { FORMAT_V1, headerOf } from './blob.js';
import { ProviderConfigError, ProviderUnavailableError, type KeyProvider } from './keyProvider.js';

export interface Pkcs11Settings {
  /** Path of the vendor's PKCS#11 library. */
  module: string;
  /** The token, by label (preferred) or by slot id. Exactly one. */
  tokenLabel?: string;
  slot?: number;
  /** CKA_LABEL of the root key (an AES-256 secret key object on the token). */
  keyLabel: string;
  /** Prefix of the setting names in messages ('' for the service, 'NEW_' for rotate-key's target). */
  settingPrefix?: string;
}

type Binding = typeof P;

const HEADER_LEN = 5;
const NONCE_LEN = 12;
const TAG_LEN = 16;

// Cryptoki return values this code tells apart (PKCS#11 v2.40, section 11.1).
const CKR = {
  GENERAL_ERROR: 0x05,
  DATA_INVALID: 0x20,
  DATA_LEN_RANGE: 0x21,
  ENCRYPTED_DATA_INVALID: 0x40,
  ENCRYPTED_DATA_LEN_RANGE: 0x41,
  MECHANISM_INVALID: 0x70,
  MECHANISM_PARAM_INVALID: 0x71,
  PIN_INCORRECT: 0xa0,
  PIN_INVALID: 0xa1,
  PIN_LEN_RANGE: 0xa2,
  PIN_EXPIRED: 0xa3,
  PIN_LOCKED: 0xa4,
  USER_ALREADY_LOGGED_IN: 0x100,
  CRYPTOKI_ALREADY_INITIALIZED: 0x191,
} as const;

// A decryption that fails on its input (a tampered or foreign blob) rather than on the
// token: UNWRAP_FAILED, like the local provider. SoftHSM2 reports a bad GCM tag as
// CKR_GENERAL_ERROR. Every other failure means the token cannot serve: KEY_UNAVAILABLE.
const INPUT_ERRORS = new Set<number>([
  CKR.GENERAL_ERROR,
  CKR.DATA_INVALID,
  CKR.DATA_LEN_RANGE,
  CKR.ENCRYPTED_DATA_INVALID,
  CKR.ENCRYPTED_DATA_LEN_RANGE,
]);

const codeOf = (err: unknown): number | undefined => {
  const c = (err as { code?: unknown }).code;
  return typeof c === 'number' ? c : undefined;
};
const nameOf = (err: unknown): string => {
  // pkcs11js messages are the CKR_ name (and, for native errors, the function); no input.
  const m = (err as { message?: unknown }).message;
  const first = typeof m === 'string' ? (m.split(/[\s:]/)[0] ?? '') : '';
  return /^CKR_[A-Z_]+$/.test(first) ? first : codeOf(err) !== undefined ? `CKR 0x${codeOf(err)!.toString(16)}` : 'error';
};

function loadBinding(setting: string): Binding {
  try {
    return createRequire(import.meta.url)('pkcs11js') as Binding;
  } catch {
    throw new ProviderConfigError(setting, 'the pkcs11js binding is not installed (it is an optional dependency: npm ci on a machine with a C++ toolchain)');
  }
}

/** An open, logged-in session on the configured token, and the module it came from. */
interface Connection {
  lib: Binding;
  module: P.PKCS11;
  session: Buffer;
  tokenLabel: string;
}

/**
 * Loads the module, finds the token, opens a session and logs in as the user. The PIN
 * bytes are the caller's to zero (pkcs11js takes the PIN as a string: it lives in this
 * thread's heap until collected; the thread is a crypto worker, which holds keys anyway).
 */
function connect(s: Pkcs11Settings, pin: Uint8Array, readWrite: boolean): Connection {
  const pre = s.settingPrefix ?? '';
  const lib = loadBinding(`${pre}PKCS11_MODULE`);
  const module = new lib.PKCS11();
  try {
    module.load(s.module);
  } catch {
    throw new ProviderConfigError(`${pre}PKCS11_MODULE`, `cannot load the PKCS#11 library ${s.module}`);
  }
  try {
    // One process, several workers: the first initialises the library for all.
    module.C_Initialize({ flags: lib.CKF_OS_LOCKING_OK });
  } catch (err) {
    if (codeOf(err) !== CKR.CRYPTOKI_ALREADY_INITIALIZED) {
      throw new ProviderConfigError(`${pre}PKCS11_MODULE`, `C_Initialize failed (${nameOf(err)})`);
    }
  }
  let slot: Buffer | undefined;
  let tokenLabel = '';
  const tokenSetting = s.tokenLabel !== undefined ? `${pre}PKCS11_TOKEN_LABEL` : `${pre}PKCS11_SLOT`;
  try {
    for (const candidate of module.C_GetSlotList(true)) {
      const label = module.C_GetTokenInfo(candidate).label.replace(/[\s\0]+$/, '');
      const id = candidate.length >= 8 ? Number(candidate.readBigUInt64LE(0)) : candidate.length >= 4 ? candidate.readUInt32LE(0) : -1;
      if (s.tokenLabel !== undefined ? label === s.tokenLabel : id === s.slot) {
        slot = candidate;
        tokenLabel = label;
        break;
      }
    }
  } catch (err) {
    throw new ProviderConfigError(tokenSetting, `cannot list the tokens (${nameOf(err)})`);
  }
  if (slot === undefined) {
    throw new ProviderConfigError(
      tokenSetting,
      s.tokenLabel !== undefined ? `no token labelled '${s.tokenLabel}' is present` : `no token is present in slot ${s.slot}`,
    );
  }
  let session: Buffer;
  try {
    session = module.C_OpenSession(slot, lib.CKF_SERIAL_SESSION | (readWrite ? lib.CKF_RW_SESSION : 0));
  } catch (err) {
    throw new ProviderConfigError(tokenSetting, `cannot open a session (${nameOf(err)})`);
  }
  let pinText = Buffer.from(pin.buffer, pin.byteOffset, pin.byteLength).toString('utf8');
  try {
    module.C_Login(session, lib.CKU_USER, pinText);
  } catch (err) {
    const code = codeOf(err);
    if (code !== CKR.USER_ALREADY_LOGGED_IN) {
      const pinProblem = [CKR.PIN_INCORRECT, CKR.PIN_INVALID, CKR.PIN_LEN_RANGE, CKR.PIN_EXPIRED, CKR.PIN_LOCKED].includes(code as never);
      throw new ProviderConfigError(
        pinProblem ? `${pre}PKCS11_PIN` : tokenSetting,
        pinProblem ? `the token refused the PIN (${nameOf(err)})` : `login failed (${nameOf(err)})`,
      );
    }
  } finally {
    pinText = '';
  }
  return { lib, module, session, tokenLabel };
}

function findKey(c: Connection, label: string): Buffer[] {
  const { lib, module, session } = c;
  module.C_FindObjectsInit(session, [
    { type: lib.CKA_CLASS, value: lib.CKO_SECRET_KEY },
    { type: lib.CKA_LABEL, value: label },
  ]);
  try {
    return module.C_FindObjects(session, 2);
  } finally {
    module.C_FindObjectsFinal(session);
  }
}

const bool = (v: unknown) => Buffer.isBuffer(v) && v.length > 0 && v[0] !== 0;

/** The root key's handle, after checking that it is a usable, non-extractable AES-256 key. */
function rootKey(c: Connection, s: Pkcs11Settings): Buffer {
  const setting = `${s.settingPrefix ?? ''}PKCS11_KEY_LABEL`;
  const found = findKey(c, s.keyLabel);
  if (found.length === 0) {
    throw new ProviderConfigError(setting, `no key labelled '${s.keyLabel}' in token '${c.tokenLabel}' (create it with: vault-standalone hsm-init)`);
  }
  if (found.length > 1) throw new ProviderConfigError(setting, `more than one key labelled '${s.keyLabel}' in token '${c.tokenLabel}'`);
  const { lib, module, session } = c;
  const attrs = module.C_GetAttributeValue(session, found[0]!, [
    { type: lib.CKA_KEY_TYPE },
    { type: lib.CKA_VALUE_LEN },
    { type: lib.CKA_SENSITIVE },
    { type: lib.CKA_EXTRACTABLE },
    { type: lib.CKA_ENCRYPT },
    { type: lib.CKA_DECRYPT },
  ]);
  const [type, len, sensitive, extractable, enc, dec] = attrs.map((a) => a.value as Buffer | undefined);
  const uint = (b: Buffer | undefined) => (b && b.length >= 4 ? b.readUInt32LE(0) : -1);
  if (uint(type) !== lib.CKK_AES || uint(len) !== 32) throw new ProviderConfigError(setting, `key '${s.keyLabel}' is not an AES-256 key`);
  if (!bool(sensitive) || bool(extractable)) {
    throw new ProviderConfigError(setting, `key '${s.keyLabel}' must be sensitive and non-extractable (CKA_SENSITIVE=true, CKA_EXTRACTABLE=false)`);
  }
  if (!bool(enc) || !bool(dec)) throw new ProviderConfigError(setting, `key '${s.keyLabel}' must allow CKA_ENCRYPT and CKA_DECRYPT`);
  return found[0]!;
}

function gcm(lib: Binding, iv: Buffer, aad: Buffer): P.Mechanism {
  return { mechanism: lib.CKM_AES_GCM, parameter: { type: lib.CK_PARAMS_AES_GCM, iv, ivBits: NONCE_LEN * 8, aad, tagBits: TAG_LEN * 8 } as P.GcmParams };
}

export class Pkcs11KeyProvider implements KeyProvider {
  readonly id = 'pkcs11';
  readonly currentVersion: number;
  readonly versions: readonly number[];
  readonly #c: Connection;
  readonly #key: Buffer;

  private constructor(c: Connection, key: Buffer, version: number) {
    this.#c = c;
    this.#key = key;
    this.currentVersion = version;
    this.versions = Object.freeze([version]);
  }

  /** Connects, logs in and checks the key; throws ProviderConfigError naming the setting. */
  static open(s: Pkcs11Settings, pin: Uint8Array, version: number): Pkcs11KeyProvider {
    if (!Number.isInteger(version) || version < 1 || version > 0xffffffff) throw new RangeError('root key version must be a positive uint32');
    const c = connect(s, pin, false);
    const key = rootKey(c, s);
    const provider = new Pkcs11KeyProvider(c, key, version);
    provider.#probe(s);
    return provider;
  }

  // The mechanism as this service uses it (caller-supplied 96-bit IV, 128-bit tag):
  // some tokens refuse a caller's IV; say so at start, not at the first new project.
  #probe(s: Pkcs11Settings): void {
    const probe = Buffer.alloc(32);
    try {
      const wrapped = this.wrap(probe, 'vault-standalone:pkcs11-probe');
      if (this.unwrap(wrapped, 'vault-standalone:pkcs11-probe')?.equals(probe) !== true) throw new Error('round trip');
    } catch (err) {
      throw new ProviderConfigError(
        `${s.settingPrefix ?? ''}PKCS11_MODULE`,
        `the token cannot wrap with CKM_AES_GCM and a caller-supplied IV (${err instanceof ProviderUnavailableError ? err.message : 'round trip failed'})`,
      );
    }
  }

  wrap(dataKey: Buffer, aad: string, version = this.currentVersion): Buffer {
    if (version !== this.currentVersion) throw new RangeError('root key version is not loaded');
    const { lib, module, session } = this.#c;
    const out = Buffer.alloc(HEADER_LEN + NONCE_LEN + dataKey.length + TAG_LEN);
    out[0] = FORMAT_V1;
    out.writeUInt32BE(version, 1);
    const iv = randomFillSync(Buffer.alloc(NONCE_LEN));
    iv.copy(out, HEADER_LEN);
    const ad = Buffer.concat([out.subarray(0, HEADER_LEN), Buffer.from(aad, 'utf8')]);
    try {
      module.C_EncryptInit(session, gcm(lib, iv, ad), this.#key);
      const body = module.C_Encrypt(session, dataKey, Buffer.alloc(dataKey.length + TAG_LEN));
      if (body.length !== dataKey.length + TAG_LEN) throw new ProviderUnavailableError('unexpected ciphertext length');
      body.copy(out, HEADER_LEN + NONCE_LEN);
      return out;
    } catch (err) {
      if (err instanceof ProviderUnavailableError) throw err;
      throw new ProviderUnavailableError(`the PKCS#11 token cannot wrap (${nameOf(err)})`);
    }
  }

  unwrap(wrapped: Buffer, aad: string): Buffer | null {
    const header = headerOf(wrapped);
    if (header === null || header.format !== FORMAT_V1 || header.keyVersion !== this.currentVersion) return null;
    const { lib, module, session } = this.#c;
    const iv = Buffer.from(wrapped.subarray(HEADER_LEN, HEADER_LEN + NONCE_LEN));
    const ad = Buffer.concat([wrapped.subarray(0, HEADER_LEN), Buffer.from(aad, 'utf8')]);
    const body = Buffer.from(wrapped.subarray(HEADER_LEN + NONCE_LEN));
    try {
      module.C_DecryptInit(session, gcm(lib, iv, ad), this.#key);
      const plain = module.C_Decrypt(session, body, Buffer.alloc(body.length));
      return Buffer.from(plain);
    } catch (err) {
      const code = codeOf(err);
      if (code !== undefined && INPUT_ERRORS.has(code)) return null;
      throw new ProviderUnavailableError(`the PKCS#11 token cannot unwrap (${nameOf(err)})`);
    }
  }
}

/**
 * `vault-standalone hsm-init`: creates the root key in the token when it is missing.
 * Never replaces a key: returns 'exists' and changes nothing.
 */
export function createPkcs11RootKey(s: Pkcs11Settings, pin: Uint8Array): { created: boolean; tokenLabel: string } {
  const c = connect(s, pin, true);
  const { lib, module, session } = c;
  try {
    if (findKey(c, s.keyLabel).length > 0) {
      rootKey(c, s); // says what is wrong with it, if anything
      return { created: false, tokenLabel: c.tokenLabel };
    }
    try {
      module.C_GenerateKey(session, { mechanism: lib.CKM_AES_KEY_GEN }, [
        { type: lib.CKA_CLASS, value: lib.CKO_SECRET_KEY },
        { type: lib.CKA_KEY_TYPE, value: lib.CKK_AES },
        { type: lib.CKA_VALUE_LEN, value: 32 },
        { type: lib.CKA_LABEL, value: s.keyLabel },
        { type: lib.CKA_TOKEN, value: true },
        { type: lib.CKA_PRIVATE, value: true },
        { type: lib.CKA_SENSITIVE, value: true },
        { type: lib.CKA_EXTRACTABLE, value: false },
        { type: lib.CKA_MODIFIABLE, value: false },
        { type: lib.CKA_ENCRYPT, value: true },
        { type: lib.CKA_DECRYPT, value: true },
        { type: lib.CKA_WRAP, value: false },
        { type: lib.CKA_UNWRAP, value: false },
        { type: lib.CKA_SIGN, value: false },
        { type: lib.CKA_VERIFY, value: false },
        { type: lib.CKA_DERIVE, value: false },
      ]);
    } catch (err) {
      throw new ProviderConfigError(`${s.settingPrefix ?? ''}PKCS11_KEY_LABEL`, `the token refused to generate an AES-256 key (${nameOf(err)})`);
    }
    rootKey(c, s);
    return { created: true, tokenLabel: c.tokenLabel };
  } finally {
    try {
      module.C_CloseSession(session);
    } catch {
      // closing is best effort
    }
  }
}
