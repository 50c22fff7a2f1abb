// Who holds the root key. Today: a key derived from ENCRYPTION_KEY, inside the
// worker. Tomorrow: an external KMS, whose calls are network round trips — hence
// the Awaitable results; the worker already awaits them, so a KMS provider slots
// in without touching the worker's callers.
import { hkdfSync } from 'node:crypto';
import { open, seal } from './blob.js';

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
  encryptionKeyHex: string;
}

// Changing this label changes every derived key: a new label needs a new blob
// format or key version, never an in-place edit.
const ROOT_KEK_INFO = 'vault-standalone/root-kek/v1';

export function isValidEncryptionKey(hex: string): boolean {
  return typeof hex === 'string' && /^[0-9a-fA-F]{32}$/.test(hex);
}

/** HKDF-SHA-256(ikm = the 16 key bytes, salt = empty, info = ROOT_KEK_INFO) → 32 bytes. */
export function deriveRootKek(encryptionKeyHex: string): Buffer {
  if (!isValidEncryptionKey(encryptionKeyHex)) throw new RangeError('encryption key must be 32 hex characters');
  const ikm = Buffer.from(encryptionKeyHex, 'hex');
  const kek = Buffer.from(hkdfSync('sha256', ikm, Buffer.alloc(0), ROOT_KEK_INFO, 32));
  ikm.fill(0);
  return kek;
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
      keks.set(k.version, deriveRootKek(k.encryptionKeyHex));
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
