// Where key material is and is not: workers get an empty environment and are
// started only at creation; the facade holds no key; importing the worker module
// on the main thread loads no key.
import t from 'tap';
import { inspect } from 'node:util';
import { poolOptions } from '../../crypto/index.js';
import handle from '../../crypto/worker.js';
import { cryptoFor, KEY_A, KEY_B } from './fixtures.js';

t.test('pool settings: empty env, fixed size, never idle-reaped', async (t) => {
  const o = poolOptions({ rootKeys: [{ version: 1, keyHex: KEY_A }], currentVersion: 1 }, 3);
  t.same(o.env, {});
  t.equal(o.minThreads, 3);
  t.equal(o.maxThreads, 3);
  t.equal(o.idleTimeout, Infinity);
});

t.test('the facade keeps no hex key in any field', async (t) => {
  const c = await cryptoFor(t, { encryptionKeyHex: KEY_B, rootKeyVersion: 2, previousKeys: [{ version: 1, keyHex: KEY_A }] });
  const seen = inspect(c, { showHidden: true, depth: Infinity, getters: true }) + JSON.stringify(c);
  t.notOk(seen.includes(KEY_A) || seen.includes(KEY_B));
});

t.test('the worker module on the main thread holds no key and does nothing', async (t) => {
  t.same(await handle({ op: 'ping' }), { ok: false, code: 'KEY_UNAVAILABLE' });
  t.same(await handle({ op: 'generateDataKey', keyAad: 'x' }), { ok: false, code: 'KEY_UNAVAILABLE' });
});
