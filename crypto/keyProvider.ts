// Who holds the root key. Today: a key derived from ENCRYPTION_KEY, inside the
// worker. Tomorrow: an external KMS, whose calls are network round trips — hence
// the Awaitable results; the worker already awaits them, so a KMS provider slots
// in without touching the worker's callers.
import { hkdfSync } from 'node:crypto';
import { headerOf, open, seal } from './blob.js';

type Awaitable<T> = T | Promise<T>;

export interface KeyProvider {
  readonly id: string;
  /** Root key version used for new wraps. */
  readonly currentVersion: number;
  /** Every root key version this provider can unwrap (and wrap to, for rotation). */
  readonly versions: readonly number[];
  /** Seals a data key (blob format) under root key `version` (default: current). */
  wrap(dataKey: Buffer, aad: string, version?: number): Awaitable<Buffer>;
  /** Null on any failure, like blob.open. */
  unwrap(wrapped: Buffer, aad: string): Awaitable<Buffer | null>;
}

export interface RootKey {
  version: number;
  /** The 16 bytes of ENCRYPTION_KEY; the caller zeroes them once the provider is built. */
  encryptionKey: Uint8Array;
}

// Changing this label changes every derived key: a new label needs a new blob
// format or key version, never an in-place edit.
const ROOT_KEK_INFO = 'vault-standalone/root-kek/v1';

export const ENCRYPTION_KEY_BYTES = 16;

// No regular expression: a successful match leaves its subject in the engine's
// last-match state (RegExp.input), a reference to the key string nobody can drop.
export function isValidEncryptionKey(hex: string): boolean {
  if (typeof hex !== 'string' || hex.length !== ENCRYPTION_KEY_BYTES * 2) return false;
  for (let i = 0; i < hex.length; i++) {
    const c = hex.charCodeAt(i);
    const digit = c >= 0x30 && c <= 0x39;
    const letter = (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
    if (!digit && !letter) return false;
  }
  return true;
}

/** HKDF-SHA-256(ikm = the 16 key bytes, salt = empty, info = ROOT_KEK_INFO) → 32 bytes. */
export function deriveRootKek(encryptionKey: Uint8Array): Buffer {
  if (!(encryptionKey instanceof Uint8Array) || encryptionKey.byteLength !== ENCRYPTION_KEY_BYTES) {
    throw new RangeError('encryption key must be 16 bytes');
  }
  return Buffer.from(hkdfSync('sha256', encryptionKey, Buffer.alloc(0), ROOT_KEK_INFO, 32));
}

export class LocalKeyProvider implements KeyProvider {
  readonly id = 'local';
  readonly currentVersion: number;
  readonly versions: readonly number[];
  readonly #keks: Map<number, Buffer>;

  constructor(rootKeys: readonly RootKey[], currentVersion: number) {
    const keks = new Map<number, Buffer>();
    for (const k of rootKeys) {
      if (!Number.isInteger(k.version) || k.version < 1 || k.version > 0xffffffff) {
        throw new RangeError('root key version must be a positive uint32');
      }
      if (keks.has(k.version)) throw new RangeError('duplicate root key version');
      keks.set(k.version, deriveRootKek(k.encryptionKey));
    }
    if (!keks.has(currentVersion)) throw new RangeError('current root key version is not loaded');
    this.#keks = keks;
    this.currentVersion = currentVersion;
    this.versions = Object.freeze([...keks.keys()]);
  }

  wrap(dataKey: Buffer, aad: string, version = this.currentVersion): Buffer {
    const kek = this.#keks.get(version);
    if (kek === undefined) throw new RangeError('root key version is not loaded');
    return seal(kek, version, dataKey, aad);
  }

  unwrap(wrapped: Buffer, aad: string): Buffer | null {
    return open((v) => this.#keks.get(v), wrapped, aad);
  }
}

/**
 * A provider cannot serve right now (token removed, session lost, KMS unreachable).
 * The worker answers KEY_UNAVAILABLE (the service: 503); unwrapped keys already in the
 * worker's cache keep serving. Never carries key material or input.
 */
export class ProviderUnavailableError extends Error {
  override readonly name = 'ProviderUnavailableError';
}

/**
 * A provider could not be built from its settings (module will not load, no such
 * token, wrong PIN, no such key). `message` is one line naming the setting, e.g.
 * "PKCS11_PIN: the token refused the PIN (CKR_PIN_INCORRECT)"; it never holds a secret.
 */
export class ProviderConfigError extends Error {
  override readonly name = 'ProviderConfigError';
  constructor(readonly setting: string, detail: string) {
    super(`${setting}: ${detail}`);
  }
}

/**
 * Several root key versions, each held by its own provider (a local key and an HSM
 * key during a migration between them). Wraps go to the version asked for; unwraps to
 * the version in the wrapped blob's header.
 */
export class CompositeKeyProvider implements KeyProvider {
  readonly id: string;
  readonly currentVersion: number;
  readonly versions: readonly number[];
  readonly #byVersion = new Map<number, KeyProvider>();

  constructor(parts: readonly KeyProvider[], currentVersion: number) {
    for (const p of parts) {
      for (const v of p.versions) {
        if (this.#byVersion.has(v)) throw new RangeError('duplicate root key version');
        this.#byVersion.set(v, p);
      }
    }
    const current = this.#byVersion.get(currentVersion);
    if (current === undefined) throw new RangeError('current root key version is not loaded');
    this.id = current.id;
    this.currentVersion = currentVersion;
    this.versions = Object.freeze([...this.#byVersion.keys()]);
  }

  wrap(dataKey: Buffer, aad: string, version = this.currentVersion): Awaitable<Buffer> {
    const p = this.#byVersion.get(version);
    if (p === undefined) throw new RangeError('root key version is not loaded');
    return p.wrap(dataKey, aad, version);
  }

  unwrap(wrapped: Buffer, aad: string): Awaitable<Buffer | null> {
    const header = headerOf(wrapped);
    const p = header === null ? undefined : this.#byVersion.get(header.keyVersion);
    return p === undefined ? null : p.unwrap(wrapped, aad);
  }
}
