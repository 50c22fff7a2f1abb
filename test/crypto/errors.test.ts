// CryptoError: stable codes, and messages that never carry inputs or keys.
import t, { type Test } from 'tap';
import { createCrypto, CryptoError } from '../../crypto/index.js';
import { codeOf, cryptoFor, KEY_A, KEY_B } from './fixtures.js';

const SECRET = 'PLAINTEXT-SENTINEL-9f8e7d';

function clean(t: Test, err: unknown) {
  t.ok(err instanceof CryptoError);
  const text = `${String(err)} ${(err as Error).stack ?? ''} ${JSON.stringify(err)}`;
  for (const s of [SECRET, KEY_A, KEY_B, KEY_A.toUpperCase()]) t.notOk(text.includes(s), 'no input or key in the error');
}

t.test('failures carry no plaintext, aad or key', async (t) => {
  const c = await cryptoFor(t);
  const dk = await c.generateDataKey('project:p1');
  const [blob] = await c.sealMany(dk, 'project:p1', [{ plaintext: SECRET, aad: SECRET }]);
  clean(t, await c.openMany(dk, 'project:p1', [{ blob: blob!, aad: `${SECRET}x` }]).catch((e: unknown) => e));
  clean(t, await c.openMany(dk, SECRET, []).catch((e: unknown) => e));
  clean(t, await c.rewrap(dk, SECRET, 42).catch((e: unknown) => e));
  clean(t, await createCrypto({ encryptionKeyHex: `${KEY_A}0` }).catch((e: unknown) => e));
  clean(t, await createCrypto({ encryptionKeyHex: KEY_A, previousKeys: [{ version: 1, keyHex: KEY_B }] }).catch((e: unknown) => e));
});

t.test('malformed requests are BAD_TASK, not a crash', async (t) => {
  const c = await cryptoFor(t);
  const dk = await c.generateDataKey('project:p1');
  const any = c as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
  t.equal(await codeOf(t, any.openMany!(dk, 'project:p1', [{ blob: 'not bytes', aad: 'a' }])), 'BAD_TASK');
  t.equal(await codeOf(t, any.openMany!(dk, 'project:p1', null)), 'BAD_TASK');
  t.equal(await codeOf(t, any.sealMany!(dk, 'project:p1', [{ plaintext: 1, aad: 'a' }])), 'BAD_TASK');
  t.equal(await codeOf(t, any.mac!('not a buffer', 'project:p1', 'm')), 'BAD_TASK');
  t.equal(await codeOf(t, any.rewrap!(dk, 'project:p1', 1.5)), 'BAD_TASK');
  t.same(await c.openMany(dk, 'project:p1', []), [], 'the pool still works');
});

t.test('bad key configuration is refused before any worker starts', async (t) => {
  for (const opts of [
    { encryptionKeyHex: 'short' },
    { encryptionKeyHex: KEY_A, rootKeyVersion: 0 },
    { encryptionKeyHex: KEY_A, previousKeys: [{ version: 1, keyHex: KEY_B }] },
    { encryptionKeyHex: KEY_A, rootKeyVersion: 2, previousKeys: [{ version: 1, keyHex: 'zz' }] },
  ]) {
    t.equal(await codeOf(t, createCrypto(opts)), 'KEY_UNAVAILABLE');
  }
});

t.test('after close, calls fail with KEY_UNAVAILABLE', async (t) => {
  const c = await createCrypto({ encryptionKeyHex: KEY_A, threads: 1 });
  await c.close();
  await c.close();
  t.equal(await codeOf(t, c.generateDataKey('p')), 'KEY_UNAVAILABLE');
});
