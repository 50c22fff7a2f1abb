// Root key rotation: rewrap to the new root version, then only the new key is needed.
import t from 'tap';
import { headerOf } from '../../crypto/index.js';
import { codeOf, cryptoFor, KEY_A, KEY_B } from './fixtures.js';

t.test('rewrap to a new root version', async (t) => {
  const oldOnly = await cryptoFor(t, { encryptionKeyHex: KEY_A, rootKeyVersion: 1 });
  const both = await cryptoFor(t, { encryptionKeyHex: KEY_B, rootKeyVersion: 2, previousKeys: [{ version: 1, keyHex: KEY_A }] });
  const newOnly = await cryptoFor(t, { encryptionKeyHex: KEY_B, rootKeyVersion: 2 });
  t.equal(both.rootKeyVersion, 2);

  const dk = await oldOnly.generateDataKey('project:p1');
  t.equal(headerOf(dk)?.keyVersion, 1);
  const [blob] = await oldOnly.sealMany(dk, 'project:p1', [{ plaintext: 'v', aad: 'a' }]);

  const rewrapped = await both.rewrap(dk, 'project:p1', 2);
  t.equal(headerOf(rewrapped)?.keyVersion, 2);
  t.same(await newOnly.openMany(rewrapped, 'project:p1', [{ blob: blob!, aad: 'a' }]), ['v'], 'new key alone opens old values');
  t.equal(await codeOf(t, oldOnly.openMany(rewrapped, 'project:p1', [{ blob: blob!, aad: 'a' }])), 'UNWRAP_FAILED', 'old key alone no longer does');
  t.same(await both.openMany(dk, 'project:p1', [{ blob: blob!, aad: 'a' }]), ['v'], 'both loaded: old wraps still readable');
  t.equal(headerOf(await both.generateDataKey('project:p2'))?.keyVersion, 2, 'new keys use the current version');
});

t.test('rewrap to a version that is not loaded is KEY_UNAVAILABLE', async (t) => {
  const c = await cryptoFor(t);
  const dk = await c.generateDataKey('project:p1');
  t.equal(await codeOf(t, c.rewrap(dk, 'project:p1', 9)), 'KEY_UNAVAILABLE');
});
