// The start-up canary: a data key wrapped under one ENCRYPTION_KEY does not
// unwrap under another, and that is reported as UNWRAP_FAILED (not OPEN_FAILED),
// so the service can refuse to start with a clear message.
import t from 'tap';
import { codeOf, cryptoFor, KEY_B } from './fixtures.js';

t.test('a wrong ENCRYPTION_KEY is UNWRAP_FAILED on every operation', async (t) => {
  const right = await cryptoFor(t);
  const wrong = await cryptoFor(t, { encryptionKeyHex: KEY_B });
  const dk = await right.generateDataKey('system');
  const [canary] = await right.sealMany(dk, 'system', [{ plaintext: 'canary', aad: 'canary' }]);

  t.same(await right.openMany(dk, 'system', [{ blob: canary!, aad: 'canary' }]), ['canary']);
  t.equal(await codeOf(t, wrong.openMany(dk, 'system', [{ blob: canary!, aad: 'canary' }])), 'UNWRAP_FAILED');
  t.equal(await codeOf(t, wrong.sealMany(dk, 'system', [{ plaintext: 'x', aad: 'y' }])), 'UNWRAP_FAILED');
  t.equal(await codeOf(t, wrong.mac(dk, 'system', 'm')), 'UNWRAP_FAILED');
  t.equal(await codeOf(t, wrong.rewrap(dk, 'system', 1)), 'UNWRAP_FAILED');
});

t.test('a wrapped key moved to another project is UNWRAP_FAILED', async (t) => {
  const c = await cryptoFor(t);
  const dk = await c.generateDataKey('project:p1');
  t.equal(await codeOf(t, c.openMany(dk, 'project:p2', [])), 'UNWRAP_FAILED');
});
