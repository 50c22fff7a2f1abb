// The local root key: derivation, and keys of one ENCRYPTION_KEY never open under another.
import t from 'tap';
import { hkdfSync, randomBytes } from 'node:crypto';
import { deriveRootKek, isValidEncryptionKey, LocalKeyProvider } from '../../crypto/keyProvider.js';
import { headerOf } from '../../crypto/blob.js';
import { KEY_A, KEY_B } from './fixtures.js';

const bytes = (hex: string) => Buffer.from(hex, 'hex');
const A = bytes(KEY_A);
const B = bytes(KEY_B);

t.test('root KEK = HKDF-SHA-256(16 key bytes, empty salt, versioned label)', async (t) => {
  const expected = Buffer.from(hkdfSync('sha256', Buffer.from(KEY_A, 'hex'), Buffer.alloc(0), 'vault-standalone/root-kek/v1', 32));
  t.same(deriveRootKek(A), expected);
  t.notSame(deriveRootKek(A), deriveRootKek(B));
  t.throws(() => deriveRootKek(A.subarray(1)), 'exactly 16 bytes');
});

t.test('ENCRYPTION_KEY is exactly 32 hex characters', async (t) => {
  t.ok(isValidEncryptionKey(KEY_A));
  t.ok(isValidEncryptionKey(KEY_A.toUpperCase()));
  // Every character checked, including ones a case-folding shortcut would let through.
  const odd = ['\u0010', '\u0019', '@', '`', 'G', 'g', '/', ':', '\u0660', '\uff10'];
  for (const bad of ['', KEY_A.slice(1), KEY_A + '0', KEY_A.replace('0', 'g'), ` ${KEY_A.slice(1)}`, ...odd.map((c) => c + KEY_A.slice(1))]) {
    t.notOk(isValidEncryptionKey(bad), JSON.stringify(bad));
  }
});

t.test('wrap/unwrap, bound to the aad and the root key', async (t) => {
  const a = new LocalKeyProvider([{ version: 1, encryptionKey: A }], 1);
  const b = new LocalKeyProvider([{ version: 1, encryptionKey: B }], 1);
  const dk = randomBytes(32);
  const wrapped = a.wrap(dk, 'project:1');
  t.same(a.unwrap(wrapped, 'project:1'), dk);
  t.equal(a.unwrap(wrapped, 'project:2'), null);
  t.equal(b.unwrap(wrapped, 'project:1'), null);
});

t.test('several root versions at once; wraps go to the current one unless told', async (t) => {
  const p = new LocalKeyProvider([{ version: 1, encryptionKey: A }, { version: 2, encryptionKey: B }], 2);
  const dk = randomBytes(32);
  t.equal(headerOf(p.wrap(dk, 'k'))?.keyVersion, 2);
  const old = p.wrap(dk, 'k', 1);
  t.equal(headerOf(old)?.keyVersion, 1);
  t.same(p.unwrap(old, 'k'), dk);
  t.throws(() => p.wrap(dk, 'k', 3));
});

t.test('refuses a bad configuration', async (t) => {
  t.throws(() => new LocalKeyProvider([{ version: 1, encryptionKey: A.subarray(2) }], 1));
  t.throws(() => new LocalKeyProvider([{ version: 1, encryptionKey: A }], 2));
  t.throws(() => new LocalKeyProvider([{ version: 1, encryptionKey: A }, { version: 1, encryptionKey: B }], 1));
  t.throws(() => new LocalKeyProvider([{ version: 0, encryptionKey: A }], 0));
});
