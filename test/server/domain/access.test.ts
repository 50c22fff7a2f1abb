// The rules model: secret-path globs, deny wins, the built-in roles as rules, and the
// implications between describing and reading values.
import t from 'tap';
import { accessOf, compileGlob, compileRules, globProblem, maySecrets, unrestrictedFor, type SecretRule } from '../../../server/domain/access.js';

const access = (rules: SecretRule[]) => ({ role: 'custom', rules: compileRules(rules) });
const may = (rules: SecretRule[], action: Parameters<typeof maySecrets>[1], env: string, path: string) => maySecrets(access(rules), action, env, path);

t.test('globs', async (t) => {
  const m = (glob: string, path: string) => compileGlob(glob).test(path === '/' ? '' : path);
  t.ok(m('/', '/'));
  t.notOk(m('/', '/app'), "'/' is the root folder alone");
  t.ok(m('/**', '/'));
  t.ok(m('/**', '/a/b/c'));
  t.ok(m('/app/**', '/app'), "'/app/**' holds /app itself");
  t.ok(m('/app/**', '/app/db/x'));
  t.notOk(m('/app/**', '/application'), 'a prefix of a name is not the folder');
  t.notOk(m('/app/**', '/'));
  t.ok(m('/app/*', '/app/db'));
  t.notOk(m('/app/*', '/app/db/x'), '* stays in one segment');
  t.ok(m('/a?p', '/app'));
  t.notOk(m('/a.p', '/axp'), '. is literal');
  t.ok(m('/*/db', '/x/db'));
  t.ok(m('/app/', '/app'), 'a trailing slash is ignored');
  for (const bad of ['app', '/a//b', '/a**', '/{a,b}', '/a[b]', '/a b', `/${'a'.repeat(1025)}`]) t.ok(globProblem(bad), `refused: ${bad.slice(0, 20)}`);
  for (const good of ['/', '/**', '/app/**', '/a-b_c.d/*', '/x?']) t.equal(globProblem(good), null, `accepted: ${good}`);
});

t.test('decisions', async (t) => {
  const prodRoot: SecretRule[] = [{ subject: 'secrets', action: ['read'], conditions: { environment: 'prod', secretPath: { $glob: '/' } } }];
  t.ok(may(prodRoot, 'readValue', 'prod', '/'));
  t.ok(may(prodRoot, 'describe', 'prod', '/'));
  t.notOk(may(prodRoot, 'readValue', 'prod', '/sub'));
  t.notOk(may(prodRoot, 'readValue', 'dev', '/'));
  for (const a of ['create', 'edit', 'delete'] as const) t.notOk(may(prodRoot, a, 'prod', '/'), `${a} is not read`);

  const describeOnly: SecretRule[] = [{ subject: 'secrets', action: ['describeSecret'] }];
  t.ok(may(describeOnly, 'describe', 'dev', '/x'));
  t.notOk(may(describeOnly, 'readValue', 'dev', '/x'));
  t.ok(may([{ subject: 'secrets', action: ['readValue'] }], 'describe', 'dev', '/'), 'reading a value implies seeing its name');

  const denyLocked: SecretRule[] = [
    { subject: 'secrets', action: ['read', 'edit'], conditions: { secretPath: { $glob: '/app/**' } } },
    { subject: 'secrets', action: ['describeSecret'], conditions: { secretPath: { $glob: '/app/locked/**' } }, inverted: true },
  ];
  t.ok(may(denyLocked, 'readValue', 'prod', '/app/x'));
  t.notOk(may(denyLocked, 'describe', 'prod', '/app/locked'), 'deny wins');
  t.notOk(may(denyLocked, 'readValue', 'prod', '/app/locked/deep'), 'no value where the name is denied');
  t.ok(may(denyLocked, 'edit', 'prod', '/app/locked'), 'a deny of one action leaves the others');

  const everywhereButProd: SecretRule[] = [
    { subject: 'secrets', action: ['read'] },
    { subject: 'secrets', action: ['read'], conditions: { environment: 'prod' }, inverted: true },
  ];
  t.ok(may(everywhereButProd, 'readValue', 'dev', '/a'));
  t.notOk(may(everywhereButProd, 'readValue', 'prod', '/a'));
  t.notOk(unrestrictedFor(access(everywhereButProd), 'readValue'), 'a deny takes the action off the fast path');
  t.notOk(may([], 'describe', 'prod', '/'), 'no rule, nothing');
});

t.test('built-in roles are rules', async (t) => {
  const of = (role: 'admin' | 'member' | 'viewer' | 'no-access') => accessOf({ role, customRoleId: null, customRoleSlug: null, permissions: null, roleVersion: null });
  for (const r of ['admin', 'member'] as const) t.ok(unrestrictedFor(of(r), 'describe', 'readValue', 'create', 'edit', 'delete'), r);
  t.ok(unrestrictedFor(of('viewer'), 'describe', 'readValue'));
  t.notOk(maySecrets(of('viewer'), 'create', 'prod', '/'));
  t.notOk(maySecrets(of('no-access'), 'describe', 'prod', '/'));
  const custom = (version: number, permissions: SecretRule[]) =>
    accessOf({ role: 'custom', customRoleId: 'r1', customRoleSlug: 'r', permissions, roleVersion: version });
  const v1 = custom(1, [{ subject: 'secrets', action: ['read'] }]);
  t.equal(custom(1, []).rules, v1.rules, 'compiled once per role version');
  t.notOk(maySecrets(custom(2, []), 'describe', 'prod', '/'), 'a new version is compiled again');
  t.equal(v1.role, 'r');
});
