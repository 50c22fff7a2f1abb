// Shared by the crypto tests: two unrelated ENCRYPTION_KEYs and a pool that the
// test closes when it ends.
import type { Test } from 'tap';
import { createCrypto, CryptoError, type Crypto, type CryptoOptions } from '../../crypto/index.js';

export const KEY_A = '00112233445566778899aabbccddeeff';
export const KEY_B = 'ffeeddccbbaa99887766554433221100';

export async function cryptoFor(t: Test, opts: Partial<CryptoOptions> = {}): Promise<Crypto> {
  const c = await createCrypto({ encryptionKeyHex: KEY_A, threads: 1, ...opts });
  t.teardown(() => c.close());
  return c;
}

/** Resolves to the CryptoError code the promise rejected with (fails the test otherwise). */
export async function codeOf(t: Test, p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
  } catch (err) {
    t.ok(err instanceof CryptoError, 'rejects with a CryptoError');
    return (err as CryptoError).code;
  }
  t.fail('expected a rejection');
  return undefined;
}
