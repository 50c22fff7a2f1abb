// Project memberships of identities and users over HTTP: project admins (a member with
// the admin role, or the superadmin) add, read, change and remove them; a role change
// applies to the member's very next request, also on another replica.
import t from 'tap';
import { SYSTEM, type Actor } from '../../../server/domain/access.js';
import { ESO_LIST_QUERY, request } from '../../helpers/http.js';
import { seedHomelab, startTestService, testEnv, type TestService } from '../../helpers/service.js';
import { api, isError, machine, plainUser, snapshot, superadmin, type Method } from './helpers.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

t.test('project memberships (postgres+redis, two replicas)', async (t) => {
  const env = await testEnv(t, 'postgres+redis');
  const A = await startTestService(t, env);
  const B = await startTestService(t, env);
  const admin = await superadmin(A);
  const as = admin.token;
  const seeded = await seedHomelab(A.services);
  const P = seeded.projectId;
  const other = await A.services.projects.create(SYSTEM, { name: 'other' });
  const Q = other.id;
  const ids = (p: string) => `/api/v1/projects/${p}/memberships/identities`;
  const users = (p: string) => `/api/v1/projects/${p}/memberships/users`;
  const read = (svc: TestService, token: string, slug = 'homelab') =>
    request(`${svc.url}/api/v3/secrets/raw?${ESO_LIST_QUERY.replace('workspaceSlug=homelab', `workspaceSlug=${slug}`)}`, { token });

  t.test('identity memberships: add, get, list, change, remove', async (t) => {
    const x = await machine(A, 'x');
    isError(t, await read(A, x.token), 404, 'NotFound', "Project with slug 'homelab' not found");

    const added = await api(A, 'POST', `${ids(P)}/${x.identityId}`, as, { role: 'viewer' });
    t.equal(added.status, 200, JSON.stringify(added.body));
    const m = added.body.identityMembership;
    t.match(m, {
      id: String, identityId: x.identityId, projectId: P, role: 'viewer',
      roles: [{ role: 'viewer', isTemporary: false }], identity: { id: x.identityId, name: 'x', authMethods: ['universal-auth'] },
      createdAt: ISO, updatedAt: ISO,
    });
    t.equal((await read(A, x.token)).status, 200, 'the cached "not a member" is gone on the next request');

    const got = await api(A, 'GET', `${ids(P)}/${x.identityId}`, as);
    t.equal(got.status, 200);
    t.same(got.body.identityMembership, m);
    const list = await api(A, 'GET', ids(P), as);
    t.equal(list.status, 200);
    t.same(list.body.identityMemberships.map((e: any) => [e.identity.name, e.role]).sort(), [['homelab-eso', 'member'], ['x', 'viewer']]);

    isError(t, await api(A, 'POST', `${ids(P)}/${x.identityId}`, as, { role: 'admin' }), 400, 'BadRequest', /already exists/);

    const changed = await api(A, 'PATCH', `${ids(P)}/${x.identityId}`, as, { roles: [{ role: 'no-access' }] });
    t.equal(changed.status, 200);
    t.match(changed.body, { identityMembership: { id: m.id, role: 'no-access' }, roles: [{ role: 'no-access' }] });
    isError(t, await read(A, x.token), 403, 'PermissionDenied', 'You are not allowed to access this resource');

    const removed = await api(A, 'DELETE', `${ids(P)}/${x.identityId}`, as);
    t.equal(removed.status, 200);
    t.match(removed.body.identityMembership, { id: m.id, identityId: x.identityId, role: 'no-access' });
    isError(t, await api(A, 'GET', `${ids(P)}/${x.identityId}`, as), 404, 'NotFound', /not a member/);
    isError(t, await read(A, x.token), 404, 'NotFound', "Project with slug 'homelab' not found");

    const events = await A.services.store.sql<{ eventType: string; projectId: string; metadata: any }[]>`select event_type, project_id, metadata
      from audit_log where metadata->>'identityId' = ${x.identityId} and project_id is not null order by id`;
    t.same(events.map((e) => e.eventType), ['add-identity-to-project', 'update-identity-project-membership', 'remove-identity-from-project']);
    t.ok(events.every((e) => e.projectId === P));
    t.same(events[1]!.metadata, { identityId: x.identityId, role: 'no-access', previousRole: 'viewer', isTemporary: false });
  });

  t.test('user memberships: the superadmin, and a person who becomes project admin', async (t) => {
    const self = await api(A, 'POST', `${users(Q)}/${admin.userId}`, as, { role: 'viewer' });
    t.equal(self.status, 200, JSON.stringify(self.body));
    t.match(self.body.membership, { userId: admin.userId, projectId: Q, role: 'viewer', roles: [{ role: 'viewer' }], user: { id: admin.userId, email: 'admin@example.test' } });
    t.equal((await api(A, 'GET', `${users(Q)}/${admin.userId}`, as)).body.membership.id, self.body.membership.id);
    t.same((await api(A, 'GET', users(Q), as)).body.memberships.map((e: any) => e.userId), [admin.userId]);
    t.equal((await api(A, 'PATCH', `${users(Q)}/${admin.userId}`, as, { role: 'admin' })).body.membership.role, 'admin');
    t.equal((await api(A, 'DELETE', `${users(Q)}/${admin.userId}`, as)).status, 200);
    t.equal((await api(A, 'GET', users(Q), as)).body.memberships.length, 0);
    t.equal((await api(A, 'GET', `/api/v1/projects/slug/other`, as)).status, 200, 'the superadmin needs no membership');

    const pat = await plainUser(A, 'pat@example.test');
    const slug = () => api(A, 'GET', '/api/v1/projects/slug/other', pat.token);
    isError(t, await slug(), 404, 'NotFound', "Project with slug 'other' not found");
    t.equal((await api(A, 'POST', `${users(Q)}/${pat.userId}`, as, { role: 'viewer' })).status, 200);
    t.equal((await slug()).status, 200, 'the new member reads on its next request');
    isError(t, await api(A, 'GET', ids(Q), pat.token), 403, 'PermissionDenied', 'You are not allowed to access this resource');
    t.equal((await api(A, 'PATCH', `${users(Q)}/${pat.userId}`, as, { role: 'admin' })).status, 200);
    const y = await machine(A, 'y');
    const byPat = await api(A, 'POST', `${ids(Q)}/${y.identityId}`, pat.token, { role: 'viewer' });
    t.equal(byPat.status, 200, 'a person with the admin role manages memberships');
    t.equal((await read(A, y.token, 'other')).status, 200, 'y reads project other');
    const audit = await A.services.store.sql`select actor_type, actor_id from audit_log where event_type = 'add-identity-to-project' and project_id = ${Q}`;
    t.same(audit.map((r) => [r.actorType, r.actorId]), [['user', pat.userId]], 'recorded as the person who did it');
    t.equal((await api(A, 'PATCH', `${users(Q)}/${pat.userId}`, as, { role: 'no-access' })).status, 200);
    isError(t, await slug(), 403, 'PermissionDenied', 'You are not allowed to access this resource');
    isError(t, await api(A, 'GET', ids(Q), pat.token), 403, 'PermissionDenied');
    t.equal((await api(A, 'POST', `${users(Q)}/${admin.userId}`, as, { role: 'viewer' })).status, 200);
    isError(t, await api(A, 'POST', `${users(Q)}/${admin.userId}`, as, { role: 'viewer' }), 400, 'BadRequest', /already exists/);
  });

  t.test('an identity with the admin role manages its project, and only its project', async (t) => {
    const boss = await machine(A, 'boss', [[P, 'admin']]);
    const z = await machine(A, 'z');
    const add = await api(A, 'POST', `${ids(P)}/${z.identityId}`, boss.token, { role: 'member' });
    t.equal(add.status, 200);
    t.equal((await api(A, 'GET', `${ids(P)}/${z.identityId}`, boss.token)).body.identityMembership.role, 'member');
    t.equal((await api(A, 'PATCH', `${ids(P)}/${z.identityId}`, boss.token, { role: 'viewer' })).body.identityMembership.role, 'viewer');
    t.ok((await api(A, 'GET', ids(P), boss.token)).body.identityMemberships.some((e: any) => e.identityId === z.identityId));
    t.equal((await api(A, 'GET', users(P), boss.token)).status, 200);
    t.equal((await api(A, 'DELETE', `${ids(P)}/${z.identityId}`, boss.token)).status, 200);
    const audit = await A.services.store.sql`select actor_type, actor_id from audit_log where event_type = 'remove-identity-from-project' and metadata->>'identityId' = ${z.identityId}`;
    t.same(audit.map((r) => [r.actorType, r.actorId]), [['identity', boss.identityId]]);
    for (const [m, p] of [['GET', ids(Q)], ['POST', `${ids(Q)}/${z.identityId}`], ['GET', `${users(Q)}/${admin.userId}`]] as const) {
      isError(t, await api(A, m, p, boss.token, m === 'POST' ? { role: 'admin' } : undefined), 404, 'NotFound', `Project with ID '${Q}' not found`);
    }
  });

  t.test('permission boundaries for every operation', async (t) => {
    const target = await machine(A, 'target', [[P, 'viewer'], [Q, 'viewer']]);
    const outsider = await machine(A, 'outsider');
    const pAdmin = await machine(A, 'p-admin', [[P, 'admin']]);
    const roles = {
      'an identity with the member role': await machine(A, 'p-member', [[P, 'member']]),
      'an identity with the viewer role': await machine(A, 'p-viewer', [[P, 'viewer']]),
      'an identity with the no-access role': await machine(A, 'p-none', [[P, 'no-access']]),
      'an identity without membership': await machine(A, 'p-stranger'),
      'a person without membership': await plainUser(A, 'stranger@example.test'),
    };
    const ops = (p: string): Array<[string, Method, string, unknown?]> => [
      ['list identity memberships', 'GET', ids(p)],
      ['add an identity', 'POST', `${ids(p)}/${outsider.identityId}`, { role: 'admin' }],
      ['get an identity membership', 'GET', `${ids(p)}/${target.identityId}`],
      ['change an identity role', 'PATCH', `${ids(p)}/${target.identityId}`, { role: 'admin' }],
      ['remove an identity', 'DELETE', `${ids(p)}/${target.identityId}`],
      ['list user memberships', 'GET', users(p)],
      ['add a user', 'POST', `${users(p)}/${admin.userId}`, { role: 'admin' }],
      ['get a user membership', 'GET', `${users(p)}/${admin.userId}`],
      ['change a user role', 'PATCH', `${users(p)}/${admin.userId}`, { role: 'admin' }],
      ['remove a user', 'DELETE', `${users(p)}/${admin.userId}`],
    ];
    const before = await snapshot(A);
    for (const [name, method, path, body] of ops(P)) {
      for (const [who, caller] of Object.entries(roles)) {
        // Not a member: as a missing project (404); a member without the right: 403.
        t.test(`${name}: ${who}`, async (t) =>
          who.includes('without membership')
            ? isError(t, await api(A, method, path, caller.token, body), 404, 'NotFound', `Project with ID '${P}' not found`)
            : isError(t, await api(A, method, path, caller.token, body), 403, 'PermissionDenied'));
      }
      t.test(`${name}: no token`, async (t) => isError(t, await api(A, method, path, undefined, body), 401, 'UnauthorizedError'));
    }
    for (const [name, method, path, body] of ops(Q)) {
      t.test(`${name}: an admin of project A in project B`, async (t) =>
        isError(t, await api(A, method, path, pAdmin.token, body), 404, 'NotFound', `Project with ID '${Q}' not found`));
    }
    for (const [name, method, path, body] of ops('5d1f7c4e-0000-4000-8000-000000000000')) {
      t.test(`${name}: an unknown project is a 404 before any 403`, async (t) =>
        isError(t, await api(A, method, path, roles['an identity without membership'].token, body), 404, 'NotFound', /Project with ID/));
    }
    t.test('nothing changed', async (t) => t.same(await snapshot(A), before));
  });

  t.test('bad input: a 4xx JSON answer, nothing changed', async (t) => {
    const w = await machine(A, 'w', [[P, 'viewer']]);
    const fresh = await machine(A, 'fresh');
    const missing = '00000000-0000-4000-8000-000000000000';
    const before = await snapshot(A);
    const cases: Array<[string, Method, string, unknown, number]> = [
      ['unknown role', 'POST', `${ids(P)}/${fresh.identityId}`, { role: 'owner' }, 422],
      ['no role', 'POST', `${ids(P)}/${fresh.identityId}`, {}, 422],
      ['role of the wrong type', 'POST', `${ids(P)}/${fresh.identityId}`, { role: 5 }, 422],
      ['empty roles', 'POST', `${ids(P)}/${fresh.identityId}`, { roles: [] }, 422],
      ['two roles', 'POST', `${ids(P)}/${fresh.identityId}`, { roles: [{ role: 'admin' }, { role: 'viewer' }] }, 422],
      ['role and roles disagree', 'POST', `${ids(P)}/${fresh.identityId}`, { role: 'admin', roles: [{ role: 'viewer' }] }, 422],
      ['an array body', 'POST', `${ids(P)}/${fresh.identityId}`, ['admin'], 422],
      ['a role that is a prototype key', 'POST', `${ids(P)}/${fresh.identityId}`, { role: '__proto__' }, 422],
      ['unknown role on change', 'PATCH', `${ids(P)}/${w.identityId}`, { role: 'superadmin' }, 422],
      ['unknown identity', 'POST', `${ids(P)}/${missing}`, { role: 'viewer' }, 404],
      ['malformed identity id', 'POST', `${ids(P)}/not-a-uuid`, { role: 'viewer' }, 404],
      ['malformed project id', 'POST', `${ids("x' or 1=1 --")}/${fresh.identityId}`, { role: 'viewer' }, 404],
      ['change a non-member', 'PATCH', `${ids(P)}/${fresh.identityId}`, { role: 'viewer' }, 404],
      ['remove a non-member', 'DELETE', `${ids(P)}/${fresh.identityId}`, undefined, 404],
      ['get a non-member', 'GET', `${ids(P)}/${fresh.identityId}`, undefined, 404],
      ['duplicate', 'POST', `${ids(P)}/${w.identityId}`, { role: 'admin' }, 400],
      ['unknown user', 'POST', `${users(P)}/${missing}`, { role: 'viewer' }, 404],
      ['malformed user id', 'PATCH', `${users(P)}/123`, { role: 'viewer' }, 404],
      ['an identity id as user id', 'POST', `${users(P)}/${fresh.identityId}`, { role: 'viewer' }, 404],
    ];
    for (const [name, method, path, body, status] of cases) {
      t.test(name, async (t) => isError(t, await api(A, method, path, as, body), status));
    }
    t.test('malformed JSON and other media types', async (t) => {
      const url = `${A.url}${ids(P)}/${fresh.identityId}`;
      isError(t, await request(url, { method: 'POST', token: as, headers: { 'content-type': 'application/json' }, body: '{"role":' }), 400, 'BadRequest');
      isError(t, await request(url, { method: 'POST', token: as, headers: { 'content-type': 'text/plain' }, body: 'admin' }), 415);
    });
    t.test('nothing changed', async (t) => t.same(await snapshot(A), before));
    t.test('form bodies work', async (t) => {
      const r = await request(`${A.url}${ids(P)}/${fresh.identityId}`, {
        method: 'POST', token: as, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'role=viewer',
      });
      t.equal(r.status, 200);
    });
  });

  t.test('a role change on replica A applies to the very next request on replica B', async (t) => {
    const m = await machine(A, 'replicated');
    const actor: Actor = { kind: 'identity', identityId: m.identityId };
    let n = 0;
    // The v3 write route if this build has it, and the domain write on B either way
    // (B's own role cache decides both).
    const write = async () => {
      n++;
      const http = await request(`${B.url}/api/v3/secrets/raw/REPLICA_${n}`, {
        method: 'POST', token: m.token, json: { workspaceId: P, environment: 'prod', secretPath: '/', secretValue: `v${n}` },
      });
      const routed = !(http.status === 404 && /^Route /.test(http.body?.message ?? ''));
      const domain = await B.services.secrets
        .create(actor, { project: { id: P }, environment: 'prod', secretPath: '/', key: `REPLICA_D${n}`, value: `v${n}` })
        .then(() => 200, (err: any) => (err.code === 'FORBIDDEN' ? 403 : 500));
      return { http: routed ? http.status : undefined, domain };
    };

    t.equal((await api(A, 'POST', `${ids(P)}/${m.identityId}`, as, { role: 'member' })).status, 200);
    t.equal((await read(B, m.token)).status, 200, 'B reads (and caches the member role)');
    const w1 = await write();
    t.equal(w1.domain, 200, 'B lets a member write');
    if (w1.http !== undefined) t.equal(w1.http, 200, 'over HTTP too');

    t.equal((await api(A, 'PATCH', `${ids(P)}/${m.identityId}`, as, { role: 'viewer' })).status, 200);
    const w2 = await write();
    t.equal(w2.domain, 403, 'member -> viewer on A: B refuses the next write');
    if (w2.http !== undefined) t.equal(w2.http, 403, 'over HTTP too');
    t.equal((await read(B, m.token)).status, 200, 'a viewer still reads on B');

    t.equal((await api(A, 'PATCH', `${ids(P)}/${m.identityId}`, as, { role: 'no-access' })).status, 200);
    isError(t, await read(B, m.token), 403, 'PermissionDenied', 'You are not allowed to access this resource');

    t.equal((await api(A, 'PATCH', `${ids(P)}/${m.identityId}`, as, { role: 'viewer' })).status, 200);
    t.equal((await read(B, m.token)).status, 200, 'no-access -> viewer on A: B reads at once');

    t.equal((await api(A, 'DELETE', `${ids(P)}/${m.identityId}`, as)).status, 200);
    isError(t, await read(B, m.token), 404, 'NotFound', "Project with slug 'homelab' not found");

    t.equal((await api(A, 'POST', `${ids(P)}/${m.identityId}`, as, { role: 'viewer' })).status, 200);
    t.equal((await read(B, m.token)).status, 200, 're-added on A: B drops its cached "not a member"');

    // And the other way round.
    t.equal((await api(B, 'PATCH', `${ids(P)}/${m.identityId}`, as, { role: 'no-access' })).status, 200);
    isError(t, await read(A, m.token), 403, 'PermissionDenied');
  });

  t.test('revoking a client secret or deleting an identity on A ends its tokens on B at once', async (t) => {
    const r = await machine(A, 'revoked-on-a', [[P, 'viewer']]);
    const d = await machine(A, 'deleted-on-a', [[P, 'viewer']]);
    t.equal((await read(B, r.token)).status, 200);
    t.equal((await read(B, d.token)).status, 200);
    const [cs] = await A.services.store.identities.listClientSecrets(r.identityId);
    t.equal((await api(A, 'POST', `/api/v1/auth/universal-auth/identities/${r.identityId}/client-secrets/${cs!.id}/revoke`, as)).status, 200);
    isError(t, await read(B, r.token), 401, 'TokenError');
    t.equal((await api(A, 'DELETE', `/api/v1/identities/${d.identityId}`, as)).status, 200);
    isError(t, await read(B, d.token), 401, 'TokenError');
  });
});
