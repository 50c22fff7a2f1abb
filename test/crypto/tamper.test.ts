// Every kind of damage to a stored blob gives the same single OPEN_FAILED, with
// the index of the first bad item.
import t from 'tap';
import { codeOf, cryptoFor } from './fixtures.js';

t.test('moved, flipped, bumped, truncated: one code', async (t) => {
  const c = await cryptoFor(t);
  const dk = await c.generateDataKey('project:p1');
  const aad = 'p1/prod/ /DB_URL/1';
  const [good, blob] = await c.sealMany(dk, 'project:p1', [{ plaintext: 'ok', aad: 'ok' }, { plaintext: 'postgres://u:pw@h/db', aad }]);

  const flip = (i: number) => {
    const b = Buffer.from(blob!);
    b[i]! ^= 0x80;
    return b;
  };
  const bumped = Buffer.from(blob!);
  bumped.writeUInt32BE(2, 1);
  const cases: Array<[string, Buffer, string]> = [
    ['moved to another row', blob!, 'p1/prod/ /OTHER/1'],
    ['format byte', flip(0), aad],
    ['key version byte', flip(4), aad],
    ['key version bumped', bumped, aad],
    ['nonce', flip(10), aad],
    ['ciphertext', flip(20), aad],
    ['tag', flip(blob!.length - 1), aad],
    ['truncated', blob!.subarray(0, blob!.length - 1), aad],
    ['header only', blob!.subarray(0, 5), aad],
    ['empty', Buffer.alloc(0), aad],
  ];
  for (const [name, bad, where] of cases) {
    const err = await c.openMany(dk, 'project:p1', [{ blob: good!, aad: 'ok' }, { blob: bad, aad: where }]).catch((e: unknown) => e);
    t.match(err, { name: 'CryptoError', code: 'OPEN_FAILED', index: 1, message: 'a sealed value could not be opened' }, name);
  }
  t.equal(await codeOf(t, c.openMany(dk, 'project:p1', [{ blob: blob!, aad }, { blob: good!, aad: 'moved' }])), 'OPEN_FAILED');
});
