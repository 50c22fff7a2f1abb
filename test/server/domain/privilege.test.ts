// A writer of the database (SQL access, no root key) cannot grant privilege: the
// superadmin flag, a password hash, a membership and a custom role's rules carry a MAC
// under a key the database does not hold (storage/privilege.ts). A row changed in the
// database is refused (no superadmin, not a member, no login), not obeyed; the service's
// own writes (signup, users, memberships, roles) keep working.
import t from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { ADMIN } from '../../helpers/admin.js';
import { ESO_LIST_QUERY, request } from '../../helpers/http.js';
import { startTestService, testEnv } from '../../helpers/service.js';
import { api, machine, plainUser, superadmin } from '../admin/helpers.js';

t.test('privilege written into the database directly is not obeyed (postgres+redis)', async (t) => {
  const env = await testEnv(t, 'postgres+redis');
  const svc = await startTestService(t, env);
  const s = svc.services;
  const sql = s.store.sql;
  const admin = await superadmin(svc);
  const project = await s.projects.create(SYSTEM, { name: 'guarded' });
  const P = project.id;
  await s.secrets.create(SYSTEM, { project: { id: P }, environment: 'prod', secretPath: '/', key: 'DB_PASSWORD', value: 'the-guarded-value' });
  await s.secrets.create(SYSTEM, { project: { id: P }, environment: 'prod', secretPath: '/', key: 'OTHER', value: 'other-value' });
  const list = (token: string) => request(`${svc.url}/api/v3/secrets/raw?${ESO_LIST_QUERY.replace('workspaceSlug=homelab', 'workspaceSlug=guarded')}`, { token });
  const write = (token: string, key: string) =>
    request(`${svc.url}/api/v3/secrets/raw/${key}`, { method: 'POST', token, json: { workspaceId: P, environment: 'prod', secretPath: '/', secretValue: 'x' } });

  t.test('the setup, the superadmin, and the service\'s own membership writes work', async (t) => {
    t.equal((await api(svc, 'GET', '/api/v1/users', admin.token)).status, 200, 'the signed-up superadmin administers');
    t.equal((await api(svc, 'GET', '/api/v1/users/me', admin.token)).body.user.superAdmin, true);
    const m = await machine(svc, 'legit');
    t.equal((await list(m.token)).status, 404, 'not a member yet');
    t.equal((await api(svc, 'POST', `/api/v1/projects/${P}/memberships/identities/${m.identityId}`, admin.token, { role: 'viewer' })).status, 200);
    t.equal((await list(m.token)).status, 200, 'added through the API: reads');
    t.equal((await write(m.token, 'BY_VIEWER')).status, 403, 'a viewer does not write');
    t.equal((await api(svc, 'PATCH', `/api/v1/projects/${P}/memberships/identities/${m.identityId}`, admin.token, { roles: [{ role: 'member' }] })).status, 200);
    t.equal((await write(m.token, 'BY_MEMBER')).status, 200, 'the role changed through the API: writes');
  });

  t.test('update users set is_superadmin = true: not a superadmin', async (t) => {
    const pat = await plainUser(svc, 'pat@example.test');
    await sql`update users set is_superadmin = true where id = ${pat.userId}`;
    // A new session (the flag is read when a session is loaded).
    const again = await request(`${svc.url}/api/v3/auth/login`, { method: 'POST', json: { email: 'pat@example.test', password: 'a plain user passphrase' } });
    t.equal(again.status, 401, 'the row no longer matches its MAC: no login with it either');
    const r = await api(svc, 'GET', '/api/v1/users', pat.token);
    t.equal(r.status, 403, `the admin route refuses: ${r.status}`);
    t.equal((await api(svc, 'GET', `/api/v1/projects/${P}`, pat.token)).status, 404, 'and every project stays closed');
    t.equal((await list(pat.token)).status, 404, 'no secret is read');
    t.equal((await api(svc, 'GET', '/api/v1/users/me', pat.token)).body.user.superAdmin, false, 'me says so');
  });

  t.test('a membership inserted or changed by SQL is not obeyed', async (t) => {
    const x = await machine(svc, 'inserted');
    await sql`insert into project_memberships (id, project_id, identity_id, role) values (gen_random_uuid(), ${P}, ${x.identityId}, 'admin')`;
    t.equal((await list(x.token)).status, 404, 'an inserted membership: not a member');
    t.equal((await write(x.token, 'BY_INSERTED')).status, 404);

    const y = await machine(svc, 'changed', [[P, 'no-access']]);
    await sql`update project_memberships set role = 'admin' where identity_id = ${y.identityId}`;
    t.equal((await list(y.token)).status, 404, 'no-access changed to admin by SQL: not a member');
    t.equal((await write(y.token, 'BY_CHANGED')).status, 404);

    // A valid MAC copied from another member's row does not fit this one.
    const z = await machine(svc, 'copied');
    await sql`insert into project_memberships (id, project_id, identity_id, role, mac, mac_key_id)
      select gen_random_uuid(), project_id, ${z.identityId}, role, mac, mac_key_id from project_memberships
      where project_id = ${P} and role = 'member' limit 1`;
    t.equal((await list(z.token)).status, 404, 'a copied MAC: not a member');
  });

  t.test('a custom role\'s rules changed by SQL are not obeyed', async (t) => {
    const role = await s.roles.create(SYSTEM, { id: P }, {
      slug: 'names-only',
      name: 'Names only',
      permissions: [{ subject: 'secrets', action: ['describeSecret'], conditions: { environment: 'prod' } }],
    });
    const m = await machine(svc, 'scoped');
    await s.memberships.add(SYSTEM, { project: { id: P }, member: { kind: 'identity', id: m.identityId }, role: role.slug });
    const before = await list(m.token);
    t.equal(before.status, 200, 'the role as the service wrote it is obeyed');
    t.notMatch(JSON.stringify(before.body), /the-guarded-value/, 'names only');
    // A fresh session so the role is loaded anew after the change (caches are per version).
    const other = await machine(svc, 'scoped-2');
    await s.memberships.add(SYSTEM, { project: { id: P }, member: { kind: 'identity', id: other.identityId }, role: role.slug });
    await sql`update project_roles set permissions = ${sql.json([{ subject: 'secrets', action: ['read', 'create', 'edit', 'delete'] }])} where id = ${role.id}`;
    const after = await list(other.token);
    t.equal(after.status, 404, 'rules widened by SQL: the role grants nothing');
    t.notMatch(JSON.stringify(after.body), /the-guarded-value/);
    await sql`update project_roles set version = version + 1 where id = ${role.id}`;
    t.equal((await list(other.token)).status, 404, 'still not, whatever the version');

    // Updated through the API: obeyed again (the service MACs its own write).
    const fixed = await api(svc, 'PATCH', `/api/v1/projects/${P}/roles/${role.id}`, admin.token, {
      permissions: [{ subject: 'secrets', action: ['read'], conditions: { environment: 'prod' } }],
    });
    if (fixed.status === 200) {
      const r = await list(other.token);
      t.equal(r.status, 200, 'the role rewritten through the API is obeyed');
      t.match(JSON.stringify(r.body), /the-guarded-value/);
    } else {
      t.fail(`PATCH role: ${fixed.status} ${JSON.stringify(fixed.body)}`);
    }
  });
  // Last: the superadmin's own session no longer holds once its row changed.
  t.test('the superadmin\'s password hash replaced: no login with the new password', async (t) => {
    const known = await s.crypto.hashPassword('the attacker chose this');
    await sql`update users set password_hash = ${known} where id = ${admin.userId}`;
    const r = await request(`${svc.url}/api/v3/auth/login`, { method: 'POST', json: { email: ADMIN.email, password: 'the attacker chose this' } });
    t.equal(r.status, 401, 'refused');
  });

});
