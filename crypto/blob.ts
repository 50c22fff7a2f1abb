// The sealed-blob format, shared by values (sealed under a data key) and wrapped
// data keys (sealed under a root key):
//
//   [0]       format version (0x01)
//   [1..4]    key version, uint32 big-endian
//   [5..16]   96-bit random nonce
//   [17..-16] AES-256-GCM ciphertext
//   [-16..]   GCM tag
//
// The associated data is header || utf8(aad): the header is authenticated, so a
// bumped key version cannot redirect a blob to another key, and the caller's aad
// (the row the blob belongs to) makes a blob copied elsewhere fail to open.
// The header has a fixed length, so the concatenation is unambiguous.
import { createCipheriv, createDecipheriv, randomFillSync, type KeyObject } from 'node:crypto';

export const FORMAT_V1 = 0x01;
const HEADER_LEN = 5;
const NONCE_LEN = 12;
const TAG_LEN = 16;
const KEY_LEN = 32;
const MIN_LEN = HEADER_LEN + NONCE_LEN + TAG_LEN;

export interface BlobHeader {
  format: number;
  keyVersion: number;
}

/** A 256-bit key as bytes, or as a KeyObject (its bytes held natively, not copied per call). */
export type BlobKey = Buffer | KeyObject;
const keyLength = (key: BlobKey): number | undefined => (Buffer.isBuffer(key) ? key.length : key.symmetricKeySize);

export function seal(key: BlobKey, keyVersion: number, plaintext: Buffer, aad: string): Buffer {
  if (keyLength(key) !== KEY_LEN) throw new RangeError('seal: key must be 32 bytes');
  if (!Number.isInteger(keyVersion) || keyVersion < 0 || keyVersion > 0xffffffff) {
    throw new RangeError('seal: key version must be a uint32');
  }
  // Buffer.alloc (unlike allocUnsafe/concat) never hands out a slice of Node's
  // shared pool, so the worker can transfer this ArrayBuffer to the main thread.
  const out = Buffer.alloc(MIN_LEN + plaintext.length);
  out[0] = FORMAT_V1;
  out.writeUInt32BE(keyVersion, 1);
  const header = out.subarray(0, HEADER_LEN);
  const nonce = randomFillSync(out.subarray(HEADER_LEN, HEADER_LEN + NONCE_LEN));

  const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_LEN });
  cipher.setAAD(Buffer.concat([header, Buffer.from(aad, 'utf8')]));
  let at = HEADER_LEN + NONCE_LEN;
  at += cipher.update(plaintext).copy(out, at);
  at += cipher.final().copy(out, at);
  cipher.getAuthTag().copy(out, at);
  return out;
}

/**
 * Returns null on every failure (too short, unknown format, unknown key version,
 * bad tag) so a caller cannot learn which check failed.
 */
export function open(keyByVersion: (v: number) => BlobKey | undefined, blob: Buffer, aad: string | Uint8Array): Buffer | null {
  if (blob.length < MIN_LEN || blob[0] !== FORMAT_V1) return null;
  const key = keyByVersion(blob.readUInt32BE(1));
  if (key === undefined || keyLength(key) !== KEY_LEN) return null;
  try {
    const nonce = blob.subarray(HEADER_LEN, HEADER_LEN + NONCE_LEN);
    const decipher = createDecipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_LEN });
    decipher.setAAD(associatedData(blob, aad));
    decipher.setAuthTag(blob.subarray(blob.length - TAG_LEN));
    const body = decipher.update(blob.subarray(HEADER_LEN + NONCE_LEN, blob.length - TAG_LEN));
    const tail = decipher.final(); // throws on a bad tag
    return tail.length === 0 ? body : Buffer.concat([body, tail]);
  } catch {
    return null;
  }
}

// The associated data of the open in progress (header || aad, a string as UTF-8), written over the
// last one: setAAD reads it before returning, and a worker opens one blob at a time. Not
// secret (the header and the row's name); it spares a rendered folder two small buffers
// and a concatenation per value.
const AAD_SCRATCH_MAX = 64 * 1024;
let aadScratch = Buffer.allocUnsafeSlow(1024);
function associatedData(blob: Buffer, aad: string | Uint8Array): Buffer {
  const most = HEADER_LEN + (typeof aad === 'string' ? aad.length * 3 : aad.length);
  if (most > aadScratch.length && most <= AAD_SCRATCH_MAX) aadScratch = Buffer.allocUnsafeSlow(AAD_SCRATCH_MAX);
  // An unusually long one gets a buffer of its own, not kept.
  const into = most <= aadScratch.length ? aadScratch : Buffer.allocUnsafe(most);
  blob.copy(into, 0, 0, HEADER_LEN);
  if (typeof aad !== 'string') {
    into.set(aad, HEADER_LEN);
    return into.subarray(0, HEADER_LEN + aad.length);
  }
  return into.subarray(0, HEADER_LEN + into.write(aad, HEADER_LEN, 'utf8'));
}

/** The unauthenticated header, for routing (which key version?) and inspection only. */
export function headerOf(blob: Uint8Array): BlobHeader | null {
  if (blob.length < MIN_LEN) return null;
  const b = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
  return { format: b[0]!, keyVersion: b.readUInt32BE(1) };
}
