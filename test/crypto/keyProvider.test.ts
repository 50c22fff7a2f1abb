// The local root key: derivation, and keys of one ENCRYPTION_KEY never open under another.
import t from 'tap';
import { hkdfSync, randomBytes } from 'node:crypto';
import { deriveRootKek, isValidEncryptionKey, LocalKeyProvider } from '../../crypto/keyProvider.js';
import { headerOf } from '../../crypto/blob.js';
import { KEY_A, KEY_B } from './fixtures.js';

t.test('root KEK = HKDF-SHA-256(16 key bytes, empty salt, versioned label)', async (t) => {
  const expected = Buffer.from(hkdfSync('sha256', Buffer.from(KEY_A, 'hex'), Buffer.alloc(0), 'vault-standalone/root-kek/v1', 32));
  t.same(deriveRootKek(KEY_A), expected);
  t.notSame(deriveRootKek(KEY_A), deriveRootKek(KEY_B));
});

t.test('ENCRYPTION_KEY is exactly 32 hex characters', async (t) => {
  t.ok(isValidEncryptionKey(KEY_A));
  t.ok(isValidEncryptionKey(KEY_A.toUpperCase()));
  for (const bad of ['', KEY_A.slice(1), KEY_A + '0', KEY_A.replace('0', 'g'), ` ${KEY_A.slice(1)}`]) {
    t.notOk(isValidEncryptionKey(bad), JSON.stringify(bad));
  }
});

t.test('wrap/unwrap, bound to the aad and the root key', async (t) => {
  const a = new LocalKeyProvider([{ version: 1, encryptionKeyHex: KEY_A }], 1);
  const b = new LocalKeyProvider([{ version: 1, encryptionKeyHex: KEY_B }], 1);
  const dk = randomBytes(32);
  const wrapped = a.wrap(dk, 'project:1');
  t.same(a.unwrap(wrapped, 'project:1'), dk);
  t.equal(a.unwrap(wrapped, 'project:2'), null);
  t.equal(b.unwrap(wrapped, 'project:1'), null);
});

t.test('several root versions at once; wraps go to the current one unless told', async (t) => {
  const p = new LocalKeyProvider([{ version: 1, encryptionKeyHex: KEY_A }, { version: 2, encryptionKeyHex: KEY_B }], 2);
  const dk = randomBytes(32);
  t.equal(headerOf(p.wrap(dk, 'k'))?.keyVersion, 2);
  const old = p.wrap(dk, 'k', 1);
  t.equal(headerOf(old)?.keyVersion, 1);
  t.same(p.unwrap(old, 'k'), dk);
  t.throws(() => p.wrap(dk, 'k', 3));
});

t.test('refuses a bad configuration', async (t) => {
  t.throws(() => new LocalKeyProvider([{ version: 1, encryptionKeyHex: 'nothex' }], 1));
  t.throws(() => new LocalKeyProvider([{ version: 1, encryptionKeyHex: KEY_A }], 2));
  t.throws(() => new LocalKeyProvider([{ version: 1, encryptionKeyHex: KEY_A }, { version: 1, encryptionKeyHex: KEY_B }], 1));
  t.throws(() => new LocalKeyProvider([{ version: 0, encryptionKeyHex: KEY_A }], 0));
});
