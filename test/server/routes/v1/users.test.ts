// People management (issue 12, point 6): change my password, the superadmin resets,
// disables, re-enables and deletes people; each ends the person's sessions at once on
// every replica; the last superadmin stays. writes.test.ts checks the pipeline side
// (audit in the same transaction, replica B) for each route; this file the rules.
import t from 'tap';
import { startService } from '../../../../server/app.js';
import { parseConfig } from '../../../../server/config.js';
import { LAST_SUPERADMIN_MESSAGE } from '../../../../server/domain/users.js';
import { ADMIN, signupAdmin } from '../../../helpers/admin.js';
import { request } from '../../../helpers/http.js';
import { login as machineLogin, quietLog, seedHomelab, startTestService, testEnv } from '../../../helpers/service.js';

const PASSWORD = 'a person passphrase 123';

t.test('people management over HTTP (postgres+redis, two replicas)', async (t) => {
  const env = await testEnv(t, 'postgres+redis');
  const A = await startTestService(t, env);
  const B = await startService(parseConfig(env), quietLog);
  t.teardown(() => B.close());
  const bUrl = `http://127.0.0.1:${B.port}`;
  const admin = await signupAdmin(A.url);
  const seeded = await seedHomelab(A.services);

  const call = (url: string, method: string, path: string, token?: string, json?: unknown) => request(`${url}${path}`, { method, token, json });
  const me = async (url: string, token: string) => (await call(url, 'GET', '/api/v1/users/me', token)).status;
  const loginStatus = async (email: string, password: string) => (await call(A.url, 'POST', '/api/v3/auth/login', undefined, { email, password })).status;
  let n = 0;
  const person = async () => {
    const email = `p${++n}@example.test`;
    const user = (await call(A.url, 'POST', '/api/v1/users', admin.token, { email, password: PASSWORD, firstName: 'Pat' })).body.user;
    const tokens: string[] = [];
    for (let i = 0; i < 2; i++) tokens.push((await call(A.url, 'POST', '/api/v3/auth/login', undefined, { email, password: PASSWORD })).body.token);
    // Both replicas have the sessions cached as live.
    for (const tok of tokens) for (const url of [A.url, bUrl]) t.equal(await me(url, tok), 200);
    return { id: user.id as string, email, tokens };
  };
  const auditEvents = async (type: string) =>
    A.services.store.sql<{ metadata: unknown }[]>`select metadata from audit_log where event_type = ${type} order by id`;

  await t.test('change my password: old one required, every session ends everywhere, a new one is returned', async (t) => {
    const p = await person();
    const wrong = await call(A.url, 'POST', '/api/v1/users/me/password', p.tokens[0], { oldPassword: 'not the password', newPassword: 'the new passphrase' });
    t.equal(wrong.status, 422);
    t.equal(wrong.body.message, 'oldPassword is not your current password');
    t.equal(await me(A.url, p.tokens[0]!), 200, 'a refused change ends nothing');
    const short = await call(A.url, 'POST', '/api/v1/users/me/password', p.tokens[0], { oldPassword: PASSWORD, newPassword: 'short' });
    t.equal(short.status, 422);
    t.match(short.body.message, /^newPassword/);

    const res = await call(A.url, 'POST', '/api/v1/users/me/password', p.tokens[0], { oldPassword: PASSWORD, newPassword: 'the new passphrase' });
    t.equal(res.status, 200);
    t.match(res.headers.get('set-cookie'), /^vault_session=/, 'the browser gets the new session');
    for (const tok of p.tokens) for (const url of [A.url, bUrl]) t.equal(await me(url, tok), 401, 'old session ended on this replica');
    t.equal(await me(bUrl, res.body.token), 200, 'the new session works on B');
    t.equal(await loginStatus(p.email, PASSWORD), 401, 'the old password is refused');
    t.equal(await loginStatus(p.email, 'the new passphrase'), 200);
    t.notMatch(JSON.stringify(await auditEvents('change-password')), /passphrase|123/, 'no password in the audit trail');
  });

  await t.test('wrong current passwords are rate limited like logins', async (t) => {
    const p = await person();
    let last = 0;
    for (let i = 0; i < 4; i++) {
      last = (await call(A.url, 'POST', '/api/v1/users/me/password', p.tokens[0], { oldPassword: `guess number ${i}`, newPassword: 'the new passphrase' })).status;
    }
    t.equal(last, 429, 'the fourth wrong guess is refused without a check');
  });

  await t.test('the superadmin resets a password', async (t) => {
    const p = await person();
    const res = await call(A.url, 'POST', `/api/v1/users/${p.id}/password`, admin.token, { newPassword: 'set by the admin 789' });
    t.equal(res.status, 200);
    t.equal(res.body.user.id, p.id);
    for (const tok of p.tokens) for (const url of [A.url, bUrl]) t.equal(await me(url, tok), 401);
    t.equal(await loginStatus(p.email, PASSWORD), 401);
    t.equal(await loginStatus(p.email, 'set by the admin 789'), 200);
    const [entry] = await auditEvents('reset-user-password');
    t.match(entry!.metadata, { userId: p.id, email: p.email, sessionsEnded: 2 });
    t.notMatch(JSON.stringify(entry), /set by the admin/);
  });

  await t.test('disable and enable', async (t) => {
    const p = await person();
    const res = await call(A.url, 'POST', `/api/v1/users/${p.id}/disable`, admin.token);
    t.equal(res.status, 200);
    t.equal(res.body.user.disabled, true);
    for (const tok of p.tokens) for (const url of [A.url, bUrl]) t.equal(await me(url, tok), 401);
    const refused = await call(A.url, 'POST', '/api/v3/auth/login', undefined, { email: p.email, password: PASSWORD });
    t.equal(refused.status, 401, 'a disabled person cannot log in');
    t.equal(refused.body.message, 'Invalid login', 'with the same answer as a wrong password');
    const listed = (await call(bUrl, 'GET', '/api/v1/users', admin.token)).body.users.find((u: any) => u.id === p.id);
    t.equal(listed.disabled, true);

    const enabled = await call(A.url, 'POST', `/api/v1/users/${p.id}/enable`, admin.token);
    t.equal(enabled.status, 200);
    t.equal(enabled.body.user.disabled, false);
    t.equal(await loginStatus(p.email, PASSWORD), 200, 'enabled again: logs in');
    for (const tok of p.tokens) t.equal(await me(A.url, tok), 401, 'the old sessions stay ended');
  });

  await t.test('delete: sessions and project roles go', async (t) => {
    const p = await person();
    const role = await call(A.url, 'POST', `/api/v1/projects/${seeded.projectId}/memberships/users/${p.id}`, admin.token, { role: 'viewer' });
    t.equal(role.status, 200, 'a project role to delete with the person');
    const res = await call(A.url, 'DELETE', `/api/v1/users/${p.id}`, admin.token);
    t.equal(res.status, 200);
    t.equal(res.body.user.email, p.email);
    for (const tok of p.tokens) for (const url of [A.url, bUrl]) t.equal(await me(url, tok), 401);
    t.equal(await loginStatus(p.email, PASSWORD), 401);
    t.notOk((await call(bUrl, 'GET', '/api/v1/users', admin.token)).body.users.some((u: any) => u.id === p.id));
    const [row] = await A.services.store.sql`select count(*)::int as n from project_memberships where user_id = ${p.id}`;
    t.equal(row!.n, 0, 'project roles deleted');
    t.equal((await call(A.url, 'DELETE', `/api/v1/users/${p.id}`, admin.token)).status, 404, 'twice: 404');
  });

  await t.test('the last superadmin cannot be disabled or deleted', async (t) => {
    for (const [method, path] of [['POST', `/api/v1/users/${admin.userId}/disable`], ['DELETE', `/api/v1/users/${admin.userId}`]] as const) {
      const res = await call(A.url, method, path, admin.token);
      t.equal(res.status, 409, `${method} ${path}`);
      t.equal(res.body.message, LAST_SUPERADMIN_MESSAGE);
    }
    t.equal(await me(A.url, admin.token), 200, 'the superadmin is untouched');
  });

  await t.test('only the superadmin manages people; unknown ids are 404', async (t) => {
    const p = await person();
    const q = await person();
    for (const [method, path, json] of [
      ['POST', `/api/v1/users/${q.id}/password`, { newPassword: 'an attacker passphrase' }],
      ['POST', `/api/v1/users/${q.id}/disable`, undefined],
      ['POST', `/api/v1/users/${q.id}/enable`, undefined],
      ['DELETE', `/api/v1/users/${q.id}`, undefined],
      ['POST', `/api/v1/users/${admin.userId}/password`, { newPassword: 'an attacker passphrase' }],
    ] as const) {
      t.equal((await call(A.url, method, path, p.tokens[0], json)).status, 403, `person: ${method} ${path}`);
    }
    const machine = await machineLogin(A.url, seeded);
    t.equal((await call(A.url, 'POST', `/api/v1/users/${q.id}/disable`, machine)).status, 403, 'machine identity: 403');
    t.equal((await call(A.url, 'POST', '/api/v1/users/me/password', machine, { oldPassword: 'x', newPassword: 'y' })).status, 403, 'machine: no password');
    t.equal(await me(A.url, q.tokens[0]!), 200, 'nothing happened to q');
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      t.equal((await call(A.url, 'POST', `/api/v1/users/${id}/disable`, admin.token)).status, 404, id);
    }
    t.equal((await call(A.url, 'POST', `/api/v1/users/${q.id}/password`, admin.token, {})).status, 422, 'newPassword required');
    t.equal((await call(A.url, 'POST', '/api/v3/auth/login', undefined, { email: ADMIN.email, password: ADMIN.password })).status, 200);
  });
});
