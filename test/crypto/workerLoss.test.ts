// Keys reach each worker once, at start-up; the main thread keeps none. So every
// worker must be keyed before createCrypto resolves, and a worker lost afterwards
// cannot be replaced: crypto fails closed and says so once, through onFatal.
import t from 'tap';
import { createCrypto } from '../../crypto/index.js';
import { codeOf, KEY_A, KEY_B, withPool } from './fixtures.js';

t.test('every worker is keyed when createCrypto resolves', async (t) => {
  const threads = 3;
  const { made: c, pool } = await withPool(() => createCrypto({ encryptionKeyHex: KEY_A, threads }));
  t.teardown(() => c.close());
  t.equal(pool.threads.length, threads);
  // One task per worker at a time: these run on three different workers at once.
  const wrapped = await Promise.all(Array.from({ length: threads }, () => c.generateDataKey('project:p')));
  t.equal(wrapped.length, threads, 'each worker wraps under the root key');
  for (const dk of wrapped) t.same(await c.openMany(dk, 'project:p', []), [], 'and unwraps what any other wrapped');
});

t.test('a worker lost after start-up: every later call is KEY_UNAVAILABLE, onFatal is called once', async (t) => {
  let fatal = 0;
  let onFatal!: () => void;
  const fatalCalled = new Promise<void>((resolve) => (onFatal = resolve));
  const { made: c, pool } = await withPool(() =>
    createCrypto({
      encryptionKeyHex: KEY_B,
      rootKeyVersion: 2,
      previousKeys: [{ version: 1, keyHex: KEY_A }],
      threads: 2,
      onFatal: () => {
        fatal++;
        onFatal();
      },
    }),
  );
  t.teardown(() => c.close());
  const dk = await c.generateDataKey('project:p');
  const [blob] = await c.sealMany(dk, 'project:p', [{ plaintext: 'v', aad: 'a' }]);

  await pool.threads[0]!.terminate();
  await fatalCalled;

  t.equal(await codeOf(t, c.generateDataKey('project:p')), 'KEY_UNAVAILABLE');
  t.equal(await codeOf(t, c.sealMany(dk, 'project:p', [{ plaintext: 'v', aad: 'a' }])), 'KEY_UNAVAILABLE');
  t.equal(await codeOf(t, c.openMany(dk, 'project:p', [{ blob: blob!, aad: 'a' }])), 'KEY_UNAVAILABLE');
  t.equal(await codeOf(t, c.mac(dk, 'project:p', 'm')), 'KEY_UNAVAILABLE');
  t.equal(await codeOf(t, c.rewrap(dk, 'project:p', 1)), 'KEY_UNAVAILABLE');
  await c.close();
  t.equal(fatal, 1, 'onFatal called once, not again for the other worker or on close');
  t.equal(pool.threads.length, 0, 'no worker left running, keyed or keyless');
});

t.test('close() is not a loss: onFatal is not called', async (t) => {
  let fatal = 0;
  const c = await createCrypto({ encryptionKeyHex: KEY_A, threads: 2, onFatal: () => fatal++ });
  await c.generateDataKey('project:p');
  await c.close();
  t.equal(fatal, 0);
  t.equal(await codeOf(t, c.generateDataKey('project:p')), 'KEY_UNAVAILABLE');
});
