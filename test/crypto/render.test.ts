// The render task: a worker opens values and writes them as JSON string literals between
// the caller's segments, keeps the bytes in a bounded cache under the caller's key, and
// drops them when told to (or when the cache is full).
import t from 'tap';
import { RENDER_CACHE_MAX_ENTRIES } from '../../crypto/worker.js';
import { codeOf, cryptoFor } from './fixtures.js';

const AAD = 'project:p1';

async function sealed(t: Parameters<typeof cryptoFor>[0], values: string[]) {
  const c = await cryptoFor(t);
  const dk = await c.generateDataKey(AAD);
  const plain = values.map((plaintext, i) => ({ plaintext, aad: `p1/prod/ /K${i}/1` }));
  const blobs = await c.sealMany(dk, AAD, plain);
  const items = blobs.map((blob, i) => ({ blob, aad: plain[i]!.aad }));
  return { c, dk, items };
}

t.test('the bytes are the segments with each plaintext as JSON.stringify quotes it', async (t) => {
  const values = ['', 'plain', 'printable ~ and DEL \u007f', 'quote " backslash \\ slash /', 'ünïcødé 🔑 密钥', '\u0000\u001f\u007f\u2028\u2029', 'line\nbreak\ttab', 'x'.repeat(64 * 1024)];
  const { c, dk, items } = await sealed(t, values);
  const segments = ['{"a":[', ...values.slice(1).map((_, i) => `,${i},`), ']}'];
  const r = await c.render(dk, AAD, 'k:1', segments, items);
  t.ok(Buffer.isBuffer(r.bytes), 'bytes');
  let expected = segments[0]!;
  values.forEach((v, i) => (expected += JSON.stringify(v) + segments[i + 1]!));
  t.equal(r.bytes!.toString('utf8'), expected);
  t.same(JSON.parse(r.bytes!.toString('utf8')).a.filter((x: unknown) => typeof x === 'string'), values, 'parses back to the values');

  const again = await c.rendered('k:1');
  t.ok(again?.bytes?.equals(r.bytes!), 'the cache answers the same bytes by key alone');
  t.equal(await c.rendered('k:2'), undefined, 'an unknown key: nothing');
});

t.test('refuseIf: nothing rendered when a plaintext holds it, remembered under the key', async (t) => {
  const { c, dk, items } = await sealed(t, ['plain', 'see ${OTHER}']);
  t.same(await c.render(dk, AAD, 'k:x', ['[', ',', ']'], items, '${'), { refused: true });
  t.same(await c.rendered('k:x'), { refused: true });
  const plain = await c.render(dk, AAD, 'k:r', ['[', ',', ']'], items);
  t.equal(plain.bytes!.toString(), '["plain","see ${OTHER}"]', 'without refuseIf the value is rendered as is');
});

t.test('forgetRendered drops the keys under a prefix, in every worker, before their next task', async (t) => {
  const { c, dk, items } = await sealed(t, ['v']);
  const threads = c.poolStats().threads;
  t.equal(threads, 1);
  for (const key of ['list:e1:1:x', 'list:e1:2:r', 'list:e2:3:x']) await c.render(dk, AAD, key, ['[', ']'], items);
  c.forgetRendered('list:e1:');
  t.equal(await c.rendered('list:e1:1:x'), undefined);
  t.equal(await c.rendered('list:e1:2:r'), undefined);
  t.ok((await c.rendered('list:e2:3:x'))?.bytes, 'another prefix stays');
  c.forgetRendered('');
  t.equal(await c.rendered('list:e2:3:x'), undefined, 'an empty prefix drops everything');
});

t.test('the cache is bounded: the least recently used entry goes first', async (t) => {
  const { c, dk, items } = await sealed(t, ['v']);
  await c.render(dk, AAD, 'first', ['[', ']'], items);
  await c.render(dk, AAD, 'second', ['[', ']'], items);
  t.ok((await c.rendered('first'))?.bytes, 'first is now the most recently used');
  for (let i = 0; i < RENDER_CACHE_MAX_ENTRIES - 1; i++) await c.render(dk, AAD, `fill:${i}`, ['[', ']'], items);
  t.equal(await c.rendered('second'), undefined, 'the least recently used was evicted');
  t.ok((await c.rendered('first'))?.bytes, 'the recently used one stays');
});

t.test('failures: a blob that does not open names its index; malformed tasks are BAD_TASK', async (t) => {
  const { c, dk, items } = await sealed(t, ['a', 'b']);
  const moved = [items[0]!, { blob: items[1]!.blob, aad: 'elsewhere' }];
  const err = await c.render(dk, AAD, 'k:bad', ['[', ',', ']'], moved).catch((e: unknown) => e);
  t.match(err, { name: 'CryptoError', code: 'OPEN_FAILED', index: 1, message: 'a sealed value could not be opened' });
  t.equal(await c.rendered('k:bad'), undefined, 'nothing cached for a failed render');
  t.equal(await codeOf(t, c.render(dk, AAD, 'k:n', ['[', ']'], items)), 'BAD_TASK', 'segments must be items + 1');
  t.equal(await codeOf(t, c.render(dk, AAD, 'k:e', ['[', ',', ']'], items, '')), 'BAD_TASK', 'an empty refuseIf');
  const other = await c.generateDataKey('project:p2');
  t.equal(await codeOf(t, c.render(other, AAD, 'k:w', ['[', ',', ']'], items)), 'UNWRAP_FAILED', 'a data key under another aad');
});

t.test('segments as a function: shaped after the task is sent, the same bytes as given up front', async (t) => {
  const values = ['plain', 'quote " and ünïcødé', 'x'.repeat(10_000)];
  const { c, dk, items } = await sealed(t, values);
  const segments = ['{"a":[', ',', ',', ']}'];
  const upFront = await c.render(dk, AAD, 'k:up', segments, items);
  let calls = 0;
  const late = await c.render(dk, AAD, 'k:late', () => (calls++, segments), items);
  t.equal(calls, 1, 'shaped once');
  t.ok(late.bytes?.equals(upFront.bytes!), 'same bytes');
  t.ok((await c.rendered('k:late'))?.bytes?.equals(upFront.bytes!), 'and cached under its key');

  // Many at once through one worker: each task gets its own fixed text.
  const many = await Promise.all(
    Array.from({ length: 20 }, (_, i) => c.render(dk, AAD, `k:many:${i}`, () => [`{"n":${i},"a":[`, ',', ',', ']}'], items)),
  );
  many.forEach((r, i) => t.equal(JSON.parse(r.bytes!.toString()).n, i, `task ${i} got its own segments`));
});

t.test('segments as a function: what shaping throws is what render throws; a wrong count is BAD_TASK', async (t) => {
  const { c, dk, items } = await sealed(t, ['a', 'b']);
  const boom = new Error('shaping failed');
  const err = await c
    .render(dk, AAD, 'k:throws', () => {
      throw boom;
    }, items)
    .catch((e: unknown) => e);
  t.equal(err, boom, "the shaper's error, not the worker's");
  t.equal(await c.rendered('k:throws'), undefined, 'nothing cached');
  t.equal(await codeOf(t, c.render(dk, AAD, 'k:count', () => ['[', ']'], items)), 'BAD_TASK', 'segments must be items + 1');
  t.same(await c.render(dk, AAD, 'k:refuse', () => ['[', ',', ']'], [items[0]!, items[1]!], 'b'), { refused: true }, 'a refusal needs no segments');
  const ok = await c.render(dk, AAD, 'k:after', () => ['[', ',', ']'], items);
  t.equal(ok.bytes!.toString(), '["a","b"]', 'the worker serves the next task after each of these');
});

t.test('segments already joined (FixedText): the same bytes as the list, up front or shaped late; bad ends are BAD_TASK', async (t) => {
  const values = ['plain', 'quote " and ünïcødé 🔑', ''];
  const { c, dk, items } = await sealed(t, values);
  const segments = ['{"a":[', ',"ü",', ',', ']}'];
  const joined = { text: segments.join(''), ends: Uint32Array.from([6, 11, 12, 14]) };
  const fromList = await c.render(dk, AAD, 'k:list', segments, items);
  const upFront = await c.render(dk, AAD, 'k:joined', joined, items);
  const late = await c.render(dk, AAD, 'k:joined-late', () => joined, items);
  t.equal(upFront.bytes!.toString('utf8'), '{"a":["plain","ü","quote \\" and ünïcødé 🔑",""]}');
  t.ok(upFront.bytes!.equals(fromList.bytes!), 'as from the segments listed');
  t.ok(late.bytes!.equals(fromList.bytes!), 'and shaped after the task is sent');

  const bad = [
    [{ text: joined.text, ends: Uint32Array.from([6, 11, 14]) }, 'one end fewer than items + 1'],
    [{ text: joined.text, ends: Uint32Array.from([6, 11, 12, 13]) }, 'the last end short of the text'],
    [{ text: joined.text, ends: Uint32Array.from([6, 12, 11, 14]) }, 'ends going back'],
    [{ text: joined.text, ends: [6, 11, 12, 14] }, 'ends not a Uint32Array'],
    [{ text: 42, ends: joined.ends }, 'text not a string'],
  ] as const;
  for (const [given, why] of bad) {
    t.equal(await codeOf(t, c.render(dk, AAD, 'k:bad-ends', given as never, items)), 'BAD_TASK', `up front: ${why}`);
    t.equal(await codeOf(t, c.render(dk, AAD, 'k:bad-ends-late', () => given as never, items)), 'BAD_TASK', `late: ${why}`);
  }
  t.equal(await c.rendered('k:bad-ends'), undefined, 'nothing cached for them');
});

t.test('items packed (PackedItems): the same bytes as listed; malformed packing is BAD_TASK', async (t) => {
  const values = ['plain', 'quote " and ünïcødé 🔑', ''];
  const c = await cryptoFor(t);
  const dk = await c.generateDataKey(AAD);
  const aadsOf = ['p1/prod/ /K0/1', 'p1/prod/ /ü🔑/1', `p1/prod/ /${'k'.repeat(5000)}/1`];
  const blobs = await c.sealMany(dk, AAD, values.map((plaintext, i) => ({ plaintext, aad: aadsOf[i]! })));
  const listed = blobs.map((blob, i) => ({ blob, aad: aadsOf[i]! }));
  const ends = (xs: Uint8Array[]) => Uint32Array.from(xs.map((_, i) => xs.slice(0, i + 1).reduce((n, x) => n + x.length, 0)));
  const aadBytes = aadsOf.map((a) => Buffer.from(a, 'utf8'));
  const packed = { blobs: Buffer.concat(blobs), blobEnds: ends(blobs), aads: Buffer.concat(aadBytes), aadEnds: ends(aadBytes) };
  const segments = ['[', ',', ',', ']'];
  const fromList = await c.render(dk, AAD, 'k:listed', segments, listed);
  const fromPacked = await c.render(dk, AAD, 'k:packed', segments, packed);
  t.equal(fromPacked.bytes!.toString('utf8'), JSON.stringify(values));
  t.ok(fromPacked.bytes!.equals(fromList.bytes!), 'as from the items listed');

  const swapped = { ...packed, aadEnds: Uint32Array.from([aadBytes[1]!.length, aadBytes[0]!.length + aadBytes[1]!.length, packed.aads.length]) };
  const moved = await c.render(dk, AAD, 'k:moved', segments, { ...swapped, aads: Buffer.concat([aadBytes[1]!, aadBytes[0]!, aadBytes[2]!]) }).catch((e: unknown) => e);
  t.match(moved, { code: 'OPEN_FAILED', index: 0 }, 'each blob opens with its own AAD only');
  const bad = [
    [{ ...packed, aadEnds: packed.aadEnds.subarray(0, 2) }, 'fewer AAD ends than blobs'],
    [{ ...packed, aadEnds: Uint32Array.from([5, 3, packed.aads.length]) }, 'AAD ends going back'],
    [{ ...packed, aadEnds: Uint32Array.from([1, 2, 3]) }, 'AAD ends short of the bytes'],
    [{ ...packed, blobEnds: Uint32Array.from([1, 2, packed.blobs.length + 1]) }, 'blob ends past the bytes'],
    [{ ...packed, aads: 'p1/prod' }, 'AADs not bytes'],
    [{ ...packed, blobEnds: [1, 2, 3] }, 'ends not a Uint32Array'],
  ] as const;
  for (const [given, why] of bad) t.equal(await codeOf(t, c.render(dk, AAD, 'k:bad-packed', segments, given as never)), 'BAD_TASK', why);
  t.equal(await c.rendered('k:bad-packed'), undefined, 'nothing cached for them');
});

t.test('items streamed (an async iterable of packed parts): the same bytes as given whole; each failure as render\'s', async (t) => {
  const values = ['plain', 'quote " and ünïcødé 🔑', '', 'x'.repeat(10_000), 'last'];
  const { c, dk, items } = await sealed(t, values);
  const pack = (listed: typeof items) => {
    const aads = listed.map((i) => Buffer.from(i.aad, 'utf8'));
    const ends = (xs: Uint8Array[]) => Uint32Array.from(xs.map((_, i) => xs.slice(0, i + 1).reduce((n, x) => n + x.length, 0)));
    return { blobs: Buffer.concat(listed.map((i) => i.blob)), blobEnds: ends(listed.map((i) => i.blob)), aads: Buffer.concat(aads), aadEnds: ends(aads) };
  };
  async function* parts(sizes: number[], list = items) {
    let at = 0;
    for (const n of sizes) {
      yield pack(list.slice(at, at + n));
      at += n;
    }
  }
  const segments = ['[', ',', ',', ',', ',', ']'];
  const whole = await c.render(dk, AAD, 'k:whole', segments, items);
  t.equal(whole.bytes!.toString('utf8'), JSON.stringify(values));
  let shapedAfter = -1;
  let sent = 0;
  async function* counted() {
    for await (const p of parts([2, 0, 1, 2])) {
      sent++;
      yield p;
    }
  }
  const streamed = await c.render(dk, AAD, 'k:streamed', () => ((shapedAfter = sent), segments), counted());
  t.ok(streamed.bytes!.equals(whole.bytes!), 'parts of 2, 0, 1 and 2 items: the same bytes');
  t.equal(shapedAfter, 4, 'the segments are asked for once every part has been sent');
  t.ok((await c.rendered('k:streamed'))?.bytes?.equals(whole.bytes!), 'cached under its key');
  t.ok((await c.render(dk, AAD, 'k:one', segments, parts([5]))).bytes!.equals(whole.bytes!), 'one part');
  t.ok((await c.render(dk, AAD, 'k:given', segments, parts([1, 4]))).bytes!.equals(whole.bytes!), 'segments given up front');

  // A blob that does not open is named by its index among all the parts.
  const moved = [...items.slice(0, 3), { blob: items[3]!.blob, aad: 'elsewhere' }, items[4]!];
  t.match(await c.render(dk, AAD, 'k:moved', segments, parts([2, 2, 1], moved)).catch((e: unknown) => e), { code: 'OPEN_FAILED', index: 3 });
  t.equal(await codeOf(t, c.render(dk, AAD, 'k:few', segments, parts([2, 2]))), 'BAD_TASK', 'segments must be all the items + 1');
  t.same(await c.render(dk, AAD, 'k:refused', segments, parts([2, 3]), 'last'), { refused: true }, 'refused in a later part');
  const boom = new Error('reading failed');
  async function* failing() {
    yield pack(items.slice(0, 2));
    throw boom;
  }
  t.equal(await c.render(dk, AAD, 'k:fails', segments, failing()).catch((e: unknown) => e), boom, 'what the parts throw is what render throws');
  async function* malformed() {
    yield pack(items.slice(0, 2));
    yield { ...pack(items.slice(2)), aadEnds: Uint32Array.from([1, 2, 1_000_000]) };
  }
  t.equal(await codeOf(t, c.render(dk, AAD, 'k:malformed', segments, malformed())), 'BAD_TASK', 'a part whose ends run past its bytes (checked by the worker)');
  // The task ends before the parts do: its answer is the answer, without waiting for more.
  async function* stalled(first: typeof items) {
    yield pack(first);
    await new Promise(() => {}); // a read that never goes on
  }
  t.match(await c.render(dk, AAD, 'k:early', segments, stalled(moved.slice(3, 4))).catch((e: unknown) => e), { code: 'OPEN_FAILED', index: 0 }, 'a failure in the first part');
  t.same(await c.render(dk, AAD, 'k:early-refused', segments, stalled(items.slice(4)), 'last'), { refused: true }, 'a refusal in the first part');
  for (const k of ['k:moved', 'k:few', 'k:fails', 'k:malformed', 'k:early']) t.equal(await c.rendered(k), undefined, `nothing cached for ${k}`);
  t.ok((await c.render(dk, AAD, 'k:after', segments, parts([3, 2]))).bytes!.equals(whole.bytes!), 'the worker serves the next task after each of these');
});
