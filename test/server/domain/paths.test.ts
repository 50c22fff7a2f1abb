import t from 'tap';
import { normaliseSecretPath } from '../../../server/domain/paths.js';

t.test('normalises what is safe', async (t) => {
  t.equal(normaliseSecretPath(undefined), '/');
  t.equal(normaliseSecretPath(''), '/');
  t.equal(normaliseSecretPath('/'), '/');
  t.equal(normaliseSecretPath('/my-app/'), '/my-app');
  t.equal(normaliseSecretPath('/my-app/db.v2'), '/my-app/db.v2');
});

t.test('refuses traversal and malformed paths', async (t) => {
  for (const p of ['..', '/..', '/a/../b', '/./a', '/a//b', 'a', '/a\\b', '/a\u0000', '/.hidden', '/-x', `/${'x'.repeat(65)}`, `/${'a/'.repeat(21)}a`]) {
    t.throws(() => normaliseSecretPath(p), { code: 'VALIDATION' }, JSON.stringify(p));
  }
});
