// The blob format alone: one failure (null) for every kind of damage.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { headerOf, open, seal } from '../../crypto/blob.js';

const key = randomBytes(32);
const byVersion = (v: number) => (v === 7 ? key : undefined);
const aad = 'project:p1/env:prod/folder:/key:DB_URL/version:3';
const blob = seal(key, 7, Buffer.from('s3cret'), aad);

t.test('round trip and header', async (t) => {
  t.equal(open(byVersion, blob, aad)?.toString(), 's3cret');
  t.same(headerOf(blob), { format: 1, keyVersion: 7 });
  t.equal(blob.length, 5 + 12 + 6 + 16);
  t.equal(open(byVersion, seal(key, 7, Buffer.alloc(0), aad), aad)?.length, 0, 'empty plaintext');
});

t.test('a blob moved to another row does not open', async (t) => {
  t.equal(open(byVersion, blob, aad.replace('version:3', 'version:4')), null);
  t.equal(open(byVersion, blob, ''), null);
});

t.test('a flipped bit anywhere does not open', async (t) => {
  for (let i = 0; i < blob.length; i++) {
    const bad = Buffer.from(blob);
    bad[i]! ^= 0x01;
    t.equal(open(byVersion, bad, aad), null, `byte ${i}`);
  }
});

t.test('a bumped key version does not open, even when that version has the same key', async (t) => {
  const bad = Buffer.from(blob);
  bad.writeUInt32BE(8, 1);
  t.equal(open(byVersion, bad, aad), null, 'unknown version');
  t.equal(open(() => key, bad, aad), null, 'header is authenticated');
});

t.test('unknown format, truncated and empty blobs do not open', async (t) => {
  const bad = Buffer.from(blob);
  bad[0] = 2;
  t.equal(open(() => key, bad, aad), null);
  for (let n = 0; n < blob.length; n++) t.equal(open(byVersion, blob.subarray(0, n), aad), null, `length ${n}`);
  t.equal(headerOf(Buffer.alloc(10)), null);
});

t.test('two seals of the same plaintext differ (fresh nonce)', async (t) => {
  const again = seal(key, 7, Buffer.from('s3cret'), aad);
  t.not(again.toString('hex'), blob.toString('hex'));
  t.not(again.subarray(5, 17).toString('hex'), blob.subarray(5, 17).toString('hex'));
});

t.test('seal output owns its ArrayBuffer (safe to transfer)', async (t) => {
  const b = seal(key, 7, Buffer.from('x'), aad);
  t.equal(b.byteOffset, 0);
  t.equal(b.buffer.byteLength, b.length);
});

t.test('seal refuses a wrong-size key', async (t) => {
  t.throws(() => seal(randomBytes(16), 1, Buffer.from('x'), aad));
});

t.test('the associated data is exactly header || utf8(aad), whatever was opened before', async (t) => {
  // Opened in an order where each aad is shorter than the one before (what a reused
  // buffer could leave behind), with non-ASCII text, and one past the kept buffer's size.
  const aads = ['x'.repeat(70_000), 'ü'.repeat(30_000), `long ${'k'.repeat(2000)}`, 'ünïcødé 🔑 密钥', 'ab', ''];
  const sealed = aads.map((a) => seal(key, 7, Buffer.from(`value for ${a.length}`), a));
  aads.forEach((a, i) => t.equal(open(byVersion, sealed[i]!, a)?.toString(), `value for ${a.length}`, `aad of ${a.length} characters`));
  for (let i = 1; i < aads.length; i++) {
    t.equal(open(byVersion, sealed[i]!, aads[i - 1]!), null, `the previous aad (${aads[i - 1]!.length}) does not open blob ${i}`);
    t.equal(open(byVersion, sealed[i]!, `${aads[i]!}\u0000`), null, `nor its aad with one more character (${i})`);
  }
});
