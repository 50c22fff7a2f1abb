// The custom roles API at Infisical's paths: create, list (without rules), get by slug,
// update (version up), delete (refused while held); assignment through the memberships
// routes by slug; every bad input a 422 naming the field, with nothing written.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { SYSTEM } from '../../../../server/domain/access.js';
import { startTestService, testEnv } from '../../../helpers/service.js';
import { api, isError, machine, superadmin } from '../../admin/helpers.js';

t.test('custom roles', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const admin = await superadmin(svc);
  const P = (await svc.services.projects.create(SYSTEM, { name: 'roles' })).id;
  const base = `/api/v1/projects/${P}/roles`;
  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, json?: unknown) => api(svc, method, path, admin.token, json);
  const count = async () => (await svc.services.store.sql<{ n: number }[]>`select count(*)::int as n from project_roles`)[0]!.n;

  const reader = [{ subject: 'secrets', action: ['read'], conditions: { environment: 'prod', secretPath: { $glob: '/app/**' } } }];
  const created = await call('POST', base, { slug: 'app-reader', name: 'App reader', description: 'reads /app', permissions: reader });
  t.equal(created.status, 200, JSON.stringify(created.body));
  t.match(created.body.role, { slug: 'app-reader', name: 'App reader', description: 'reads /app', projectId: P, version: 1, permissions: [{ ...reader[0], inverted: false }] });
  const id = created.body.role.id as string;

  const list = await call('GET', base);
  t.same(list.body.roles.map((r: any) => r.slug), ['app-reader']);
  t.notOk('permissions' in list.body.roles[0], "the list leaves the rules out, as Infisical's");
  t.same((await call('GET', `${base}/slug/app-reader`)).body.role.permissions, created.body.role.permissions);
  isError(t, await call('GET', `${base}/slug/nope`), 404, 'NotFound');

  await t.test('bad input is a 422 naming the field, nothing written', async (t) => {
    const before = await count();
    const bad: Array<[unknown, RegExp]> = [
      [{ slug: 'admin', name: 'x', permissions: [] }, /reserved/],
      [{ slug: 'custom', name: 'x', permissions: [] }, /reserved/],
      [{ slug: 'Bad Slug', name: 'x', permissions: [] }, /slug/],
      [{ slug: 'ok', name: '', permissions: [] }, /name/],
      [{ slug: 'ok', name: 'x', permissions: [{ subject: 'secret-folders', action: ['read'] }] }, /permissions\.0\.subject/],
      [{ slug: 'ok', name: 'x', permissions: [{ subject: 'secrets', action: ['fly'] }] }, /permissions\.0\.action/],
      [{ slug: 'ok', name: 'x', permissions: [{ subject: 'secrets', action: [] }] }, /permissions\.0\.action/],
      [{ slug: 'ok', name: 'x', permissions: [{ subject: 'secrets', action: ['read'], conditions: { secretTags: { $in: ['a'] } } }] }, /conditions\.secretTags/],
      [{ slug: 'ok', name: 'x', permissions: [{ subject: 'secrets', action: ['read'], conditions: { secretPath: { $glob: 'app/**' } } }] }, /secretPath/],
      [{ slug: 'ok', name: 'x', permissions: [{ subject: 'secrets', action: ['read'], conditions: { secretPath: { $glob: '/{a,b}' } } }] }, /secretPath/],
      [{ slug: 'ok', name: 'x', permissions: [{ subject: 'secrets', action: ['read'], conditions: { environment: 'pr od' } }] }, /environment/],
      [{ slug: 'ok', name: 'x', permissions: [{ subject: 'secrets', action: ['read'], inverted: 'yes' }] }, /inverted/],
      [{ slug: 'ok', name: 'x', permissions: [{ subject: 'secrets', action: ['read'], fields: ['x'] }] }, /permissions\.0\.fields/],
      [{ slug: 'ok', name: 'x', permissions: 'all' }, /permissions/],
      [{ slug: 'ok', name: 'x', permissions: [], extra: 1 }, /extra/],
      [{ slug: 'ok', name: 'x', permissions: Array.from({ length: 101 }, () => ({ subject: 'secrets', action: ['read'] })) }, /at most 100/],
    ];
    for (const [body, message] of bad) isError(t, await call('POST', base, body), 422, 'ValidationFailure', message);
    isError(t, await call('POST', base, { slug: 'app-reader', name: 'again', permissions: [] }), 400, undefined, /already exists/);
    isError(t, await call('PATCH', `${base}/${id}`, { permissions: [{ subject: 'secrets', action: ['nope'] }] }), 422, 'ValidationFailure', /action/);
    isError(t, await call('PATCH', `${base}/${randomUUID()}`, { name: 'x' }), 404, 'NotFound');
    isError(t, await call('PATCH', `${base}/not-a-uuid`, { name: 'x' }), 404, 'NotFound');
    t.equal(await count(), before);
    t.equal((await call('GET', `${base}/slug/app-reader`)).body.role.version, 1, 'not changed');
  });

  await t.test('assigned by slug; the rules apply from the next request; delete refused while held', async (t) => {
    const m = await machine(svc, 'app-eso');
    await svc.services.secrets.create(SYSTEM, { project: { id: P }, environment: 'prod', secretPath: '/', key: 'ROOT', value: 'r' });
    await svc.services.folders.create(SYSTEM, { project: { id: P }, environment: 'prod', parentPath: '/', name: 'app' });
    await svc.services.secrets.create(SYSTEM, { project: { id: P }, environment: 'prod', secretPath: '/app', key: 'APP', value: 'a' });
    isError(t, await call('POST', `/api/v1/projects/${P}/memberships/identities/${m.identityId}`, { role: 'no-such-role' }), 422, 'ValidationFailure', /custom role/);
    const added = await call('POST', `/api/v1/projects/${P}/memberships/identities/${m.identityId}`, { role: 'app-reader' });
    t.equal(added.status, 200);
    t.match(added.body.identityMembership, { role: 'app-reader', roles: [{ role: 'custom', customRoleId: id, customRoleSlug: 'app-reader' }] });
    const read = (path: string) => api(svc, 'GET', `/api/v3/secrets/raw?workspaceId=${P}&environment=prod&secretPath=${encodeURIComponent(path)}`, m.token);
    t.same((await read('/app')).body.secrets.map((s: any) => s.secretKey), ['APP']);
    t.equal((await read('/')).status, 403);
    // A role change applies to its holders' next request.
    const patched = await call('PATCH', `${base}/${id}`, { name: 'Root reader', permissions: [{ subject: 'secrets', action: ['read'], conditions: { secretPath: { $glob: '/' } } }] });
    t.equal(patched.status, 200);
    t.match(patched.body.role, { slug: 'app-reader', name: 'Root reader', version: 2, description: 'reads /app' });
    t.equal((await read('/app')).status, 403);
    t.same((await read('/')).body.secrets.map((s: any) => s.secretKey), ['ROOT']);
    // A renamed slug is what memberships show.
    t.equal((await call('PATCH', `${base}/${id}`, { slug: 'root-reader' })).status, 200);
    t.equal((await call('GET', `/api/v1/projects/${P}/memberships/identities/${m.identityId}`)).body.identityMembership.role, 'root-reader');
    // Custom roles do not administer the project.
    isError(t, await api(svc, 'GET', base, m.token), 403, 'PermissionDenied');
    isError(t, await api(svc, 'POST', base, m.token, { slug: 'x', name: 'x', permissions: [] }), 403, 'PermissionDenied');
    isError(t, await call('DELETE', `${base}/${id}`), 409, 'Conflict', /assigned to 1/);
    t.equal((await call('PATCH', `/api/v1/projects/${P}/memberships/identities/${m.identityId}`, { role: 'viewer' })).status, 200);
    t.equal((await read('/app')).status, 200, 'back to a built-in role');
    const deleted = await call('DELETE', `${base}/${id}`);
    t.equal(deleted.status, 200);
    t.equal(deleted.body.role.slug, 'root-reader');
    t.same((await call('GET', base)).body.roles, []);
  });

  await t.test('a project delete takes its roles and the memberships holding them', async (t) => {
    const R = (await svc.services.projects.create(SYSTEM, { name: 'doomed' })).id;
    const role = (await call('POST', `/api/v1/projects/${R}/roles`, { slug: 'reader', name: 'Reader', permissions: [{ subject: 'secrets', action: ['read'] }] })).body.role;
    const m = await machine(svc, 'doomed-eso');
    t.equal((await call('POST', `/api/v1/projects/${R}/memberships/identities/${m.identityId}`, { role: role.slug })).status, 200);
    t.equal((await call('DELETE', `/api/v1/projects/${R}`)).status, 200);
    t.equal((await svc.services.store.sql<{ n: number }[]>`select count(*)::int as n from project_roles where project_id = ${R}`)[0]!.n, 0);
  });

  await t.test('a role of another project is not assignable, and roles are per project', async (t) => {
    const Q = (await svc.services.projects.create(SYSTEM, { name: 'other' })).id;
    t.equal((await call('POST', `/api/v1/projects/${Q}/roles`, { slug: 'q-only', name: 'Q', permissions: [] })).status, 200);
    const m = await machine(svc, 'p-member');
    isError(t, await call('POST', `/api/v1/projects/${P}/memberships/identities/${m.identityId}`, { role: 'q-only' }), 422, 'ValidationFailure');
    isError(t, await call('GET', `/api/v1/projects/${P}/roles/slug/q-only`), 404, 'NotFound');
  });
});
