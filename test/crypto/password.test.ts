// argon2id password hashing.
import t from 'tap';
import { cryptoFor } from './fixtures.js';

t.test('hash and verify', async (t) => {
  const c = await cryptoFor(t);
  const h = await c.hashPassword('correct horse');
  t.match(h, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
  t.not(await c.hashPassword('correct horse'), h, 'salted');
  t.equal(await c.verifyPassword(h, 'correct horse'), true);
  t.equal(await c.verifyPassword(h, 'correct horsE'), false);
  t.equal(await c.verifyPassword(h, ''), false);
});

t.test('a malformed or non-argon2id hash is false, never a throw', async (t) => {
  const c = await cryptoFor(t);
  const h = await c.hashPassword('pw');
  for (const bad of ['', 'garbage', '$argon2id$', h.slice(0, -5), h.replace('argon2id', 'argon2i'), '$2b$10$abcdefghijklmnopqrstuu']) {
    t.equal(await c.verifyPassword(bad, 'pw'), false, JSON.stringify(bad));
  }
  t.equal(await c.verifyPassword(undefined as unknown as string, 'pw'), false);
});
