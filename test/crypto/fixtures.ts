// Shared by the crypto tests: two unrelated ENCRYPTION_KEYs, a pool that the test
// closes when it ends, and a way to reach a pool's worker threads.
import type { Test } from 'tap';
import { Piscina } from 'piscina';
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

/**
 * Runs `start` and returns what it made, with the first piscina pool that ran a task
 * meanwhile. crypto/ exposes no pool; a test that must stop a worker, as a crash
 * would, finds it here (piscina's `threads`) instead.
 */
export async function withPool<T>(start: () => Promise<T>): Promise<{ made: T; pool: Piscina }> {
  const run = Piscina.prototype.run;
  let pool: Piscina | undefined;
  Piscina.prototype.run = function (this: Piscina, ...args: Parameters<Piscina['run']>) {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- capturing the pool that ran the task is the point
    pool ??= this;
    return run.apply(this, args);
  };
  try {
    const made = await start();
    if (pool === undefined) throw new Error('no pool ran a task');
    return { made, pool };
  } finally {
    Piscina.prototype.run = run;
  }
}
