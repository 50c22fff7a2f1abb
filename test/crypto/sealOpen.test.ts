// Many values sealed and opened in one task each, through the pool.
import t from 'tap';
import { cryptoFor } from './fixtures.js';

t.test('round trip of many values in one task', async (t) => {
  const c = await cryptoFor(t);
  const dk = await c.generateDataKey('project:p1');
  const values = ['', 'plain', 'ünïcødé 🔑 密钥', 'x'.repeat(64 * 1024), '\u0000nul\u0000'];
  const items = values.map((plaintext, i) => ({ plaintext, aad: `p1/prod/ /K${i}/1` }));
  const blobs = await c.sealMany(dk, 'project:p1', items);
  t.equal(blobs.length, values.length);
  t.ok(blobs.every((b) => Buffer.isBuffer(b)));
  const opened = await c.openMany(dk, 'project:p1', blobs.map((blob, i) => ({ blob, aad: items[i]!.aad })));
  t.same(opened, values);
});

t.test('empty requests are fine', async (t) => {
  const c = await cryptoFor(t);
  const dk = await c.generateDataKey('project:p1');
  t.same(await c.sealMany(dk, 'project:p1', []), []);
  t.same(await c.openMany(dk, 'project:p1', []), []);
});

t.test('a plain Uint8Array (as a driver may return) opens too', async (t) => {
  const c = await cryptoFor(t);
  const dk = await c.generateDataKey('project:p1');
  const [blob] = await c.sealMany(dk, 'project:p1', [{ plaintext: 'v', aad: 'a' }]);
  t.same(await c.openMany(dk, 'project:p1', [{ blob: new Uint8Array(blob!), aad: 'a' }]), ['v']);
});

t.test('two seals of the same plaintext differ', async (t) => {
  const c = await cryptoFor(t);
  const dk = await c.generateDataKey('project:p1');
  const [a, b] = await c.sealMany(dk, 'project:p1', [{ plaintext: 'same', aad: 'x' }, { plaintext: 'same', aad: 'x' }]);
  t.not(a!.toString('hex'), b!.toString('hex'));
});

t.test('data keys are per project: another project key cannot open', async (t) => {
  const c = await cryptoFor(t);
  const k1 = await c.generateDataKey('project:p1');
  const k2 = await c.generateDataKey('project:p2');
  t.not(k1.toString('hex'), k2.toString('hex'));
  const [blob] = await c.sealMany(k1, 'project:p1', [{ plaintext: 'v', aad: 'a' }]);
  await t.rejects(c.openMany(k2, 'project:p2', [{ blob: blob!, aad: 'a' }]), { code: 'OPEN_FAILED' });
});

t.test("the caller's buffers are copied, not transferred or detached", async (t) => {
  const c = await cryptoFor(t);
  const dk = await c.generateDataKey('project:p1');
  const [blob] = await c.sealMany(dk, 'project:p1', [{ plaintext: 'v', aad: 'a' }]);
  const pooled = Buffer.from(blob!); // a slice of Node's shared 8 KiB pool, like a driver's
  t.ok(pooled.buffer.byteLength > pooled.length, 'precondition: pooled');
  const keyCopy = Buffer.from(dk);
  t.same(await c.openMany(keyCopy, 'project:p1', [{ blob: pooled, aad: 'a' }, { blob: pooled, aad: 'a' }]), ['v', 'v']);
  t.same(pooled, blob, 'blob still readable');
  t.same(keyCopy, dk, 'wrapped key still readable');
  t.same(await c.mac(keyCopy, 'project:p1', 'm'), await c.mac(dk, 'project:p1', 'm'));
});
