// The permission matrix of secret operations over HTTP: every role (admin, member,
// viewer, no-access), people and identities without membership, the superadmin and
// no token at all, against every operation (list, get, create, update, delete, batch,
// versions, restore, export, on v3 and v4). A refused operation changes nothing; an
// identity of one project gets nothing of another's, whether named by id, slug or
// secret id (a project it is not a member of answers as a missing one: 404 naming only
// what was sent); an unknown project is a 404 before any 403.
import t from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { BACKENDS, seedHomelab, startTestService, testEnv, type TestService } from '../../helpers/service.js';
import { api, isError, machine, plainUser, snapshot, superadmin, type Method } from './helpers.js';

type Need = 'read' | 'write' | 'admin';
type Standing = 'admin' | 'member' | 'viewer' | 'no-access' | 'stranger' | 'anonymous';

/** A project the caller is not a member of answers as a missing one (naming what the caller sent). */
const NOT_MEMBER = /^(Project with (ID|slug) '[^']+'|Secret with ID '[^']+') not found$/;
const NOT_ALLOWED = 'You are not allowed to access this resource';

/** What a caller of `standing` gets for an operation that needs `need`. */
function expected(standing: Standing, need: Need): [number, string?, (string | RegExp)?] {
  if (standing === 'anonymous') return [401, 'UnauthorizedError', 'Token missing'];
  if (standing === 'stranger') return [404, 'NotFound', NOT_MEMBER];
  const grants: Record<string, Need[]> = { admin: ['read', 'write', 'admin'], member: ['read', 'write'], viewer: ['read'], 'no-access': [] };
  return grants[standing]!.includes(need) ? [200] : [403, 'PermissionDenied', NOT_ALLOWED];
}

async function state(svc: TestService) {
  const sql = svc.services.store.sql;
  const [row] = await sql<Record<string, unknown>[]>`select
    (select count(*)::int from secrets) as secrets,
    (select count(*)::int from secret_versions) as versions,
    (select md5(coalesce(string_agg(id::text || ':' || key || ':' || version || ':' || md5(value_blob), ',' order by id), '')) from secrets) as rows,
    (select coalesce(max(id), 0)::int from audit_log) as last_audit`;
  return { ...(await snapshot(svc)), ...row };
}

for (const backend of BACKENDS) {
  t.test(`permissions of secret operations (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend));
    const admin = await superadmin(svc);
    const seeded = await seedHomelab(svc.services);
    const P = seeded.projectId;
    const other = await svc.services.projects.create(SYSTEM, { name: 'other' });
    const Q = other.id;
    const qSecret = await svc.services.secrets.create(SYSTEM, { project: { id: Q }, environment: 'prod', key: 'B_ONLY', value: 'project B value' });
    const shared = await svc.services.secrets.create(SYSTEM, { project: { id: P }, environment: 'prod', key: 'SHARED', value: 'shared v1' });

    const personMember = await plainUser(svc, 'member@example.test');
    t.equal((await api(svc, 'POST', `/api/v1/projects/${P}/memberships/users/${personMember.userId}`, admin.token, { role: 'member' })).status, 200);
    const personViewer = await plainUser(svc, 'viewer@example.test');
    t.equal((await api(svc, 'POST', `/api/v1/projects/${P}/memberships/users/${personViewer.userId}`, admin.token, { role: 'viewer' })).status, 200);
    const callers: Array<[who: string, standing: Standing, token: string | undefined]> = [
      ['an identity with the admin role', 'admin', (await machine(svc, 'p-admin', [[P, 'admin']])).token],
      ['an identity with the member role', 'member', (await machine(svc, 'p-member', [[P, 'member']])).token],
      ['an identity with the viewer role', 'viewer', (await machine(svc, 'p-viewer', [[P, 'viewer']])).token],
      ['an identity with the no-access role', 'no-access', (await machine(svc, 'p-none', [[P, 'no-access']])).token],
      ['an identity without membership', 'stranger', (await machine(svc, 'p-stranger')).token],
      ['an admin of project B', 'stranger', (await machine(svc, 'q-admin', [[Q, 'admin']])).token],
      ['a person with the member role', 'member', personMember.token],
      ['a person with the viewer role', 'viewer', personViewer.token],
      ['a person without membership', 'stranger', (await plainUser(svc, 'stranger@example.test')).token],
      ['the superadmin', 'admin', admin.token],
      ['no token', 'anonymous', undefined],
    ];
    // Each caller deletes its own secret, so that allowed deletes do not collide.
    for (let i = 0; i < callers.length; i++) {
      for (const k of [`DEL_${i}`, `DEL4_${i}`]) await svc.services.secrets.create(SYSTEM, { project: { id: P }, environment: 'prod', key: k, value: 'to delete' });
    }

    const w3 = { workspaceId: P, environment: 'prod', secretPath: '/' };
    const w4 = { projectId: P, environment: 'prod', secretPath: '/' };
    const q3 = `workspaceId=${P}&environment=prod&secretPath=%2F`;
    const q4 = `projectId=${P}&environment=prod`;
    const ops = (i: number): Array<[op: string, need: Need, method: Method, path: string, body?: unknown]> => [
      ['list (v3)', 'read', 'GET', `/api/v3/secrets/raw?${q3}`],
      ['list (v3, by slug)', 'read', 'GET', '/api/v3/secrets/raw?workspaceSlug=homelab&environment=prod'],
      ['list (v4)', 'read', 'GET', `/api/v4/secrets?${q4}`],
      ['get (v3)', 'read', 'GET', `/api/v3/secrets/raw/SHARED?${q3}`],
      ['get (v4)', 'read', 'GET', `/api/v4/secrets/SHARED?${q4}`],
      ['versions', 'read', 'GET', `/api/v1/secret/${shared.id}/secret-versions`],
      ['create (v3)', 'write', 'POST', `/api/v3/secrets/raw/NEW_${i}`, { ...w3, secretValue: `new ${i}` }],
      ['create (v3, by slug)', 'write', 'POST', `/api/v3/secrets/raw/NEWS_${i}`, { projectSlug: 'homelab', environment: 'prod', secretValue: `new ${i}` }],
      ['create (v4)', 'write', 'POST', `/api/v4/secrets/NEW4_${i}`, { ...w4, secretValue: `new ${i}` }],
      ['update (v3)', 'write', 'PATCH', '/api/v3/secrets/raw/SHARED', { ...w3, secretValue: `by ${i}` }],
      ['update (v4)', 'write', 'PATCH', '/api/v4/secrets/SHARED', { ...w4, secretComment: `by ${i}` }],
      ['delete (v3)', 'write', 'DELETE', `/api/v3/secrets/raw/DEL_${i}`, w3],
      ['delete (v4)', 'write', 'DELETE', `/api/v4/secrets/DEL4_${i}?${q4}`],
      ['batch (v3)', 'write', 'POST', '/api/v3/secrets/batch/raw', { ...w3, secrets: [{ secretKey: `BATCH_${i}`, secretValue: 'b' }] }],
      ['batch (v4)', 'write', 'POST', '/api/v4/secrets/batch', { ...w4, secrets: [{ secretKey: `BATCH4_${i}`, secretValue: 'b' }] }],
      ['restore', 'write', 'POST', `/api/v1/secret/${shared.id}/secret-versions/1/restore`],
      ['export', 'admin', 'GET', `/api/v1/projects/${P}/export?environment=prod&format=csv`],
    ];

    t.test('refused operations: the right error, and nothing changed', async (t) => {
      const before = await state(svc);
      callers.forEach(([who, standing, token], i) => {
        for (const [op, need, method, path, body] of ops(i)) {
          const [status, error, message] = expected(standing, need);
          if (status === 200) continue;
          t.test(`${op}: ${who}`, async (t) => {
            const r = await api(svc, method, path, token, body);
            isError(t, r, status, error, message);
            t.notOk(JSON.stringify(r.body).includes('shared v1'), 'no value in the refusal');
          });
        }
      });
      t.test('nothing changed', async (t) => t.same(await state(svc), before));
    });

    t.test('allowed operations: done, with their effect', async (t) => {
      callers.forEach(([who, standing, token], i) => {
        for (const [op, need, method, path, body] of ops(i)) {
          if (expected(standing, need)[0] !== 200) continue;
          t.test(`${op}: ${who}`, async (t) => {
            const r = await api(svc, method, path, token, body);
            t.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
            if (op.startsWith('list')) t.ok(r.body.secrets.some((s: any) => s.secretKey === 'SHARED'));
            if (op.startsWith('get')) t.equal(r.body.secret.secretKey, 'SHARED');
            if (op === 'versions') t.ok(r.body.secretVersions.some((v: any) => v.version === 1 && v.secretValue === 'shared v1'));
            if (op.startsWith('create')) t.equal(r.body.secret.secretValue, `new ${i}`);
            if (op === 'update (v3)') t.equal(r.body.secret.secretValue, `by ${i}`);
            if (op.startsWith('delete')) {
              t.equal(r.body.secret.secretValue, 'to delete');
              t.equal((await api(svc, 'GET', `/api/v3/secrets/raw/${r.body.secret.secretKey}?${q3}`, admin.token)).status, 404, 'deleted');
            }
            if (op.startsWith('batch')) t.equal(r.body.secrets.length, 1);
            if (op === 'restore') t.equal(r.body.secret.secretValue, 'shared v1');
            if (op === 'export') t.match(r.body, /^key,value,comment\r\n/);
          });
        }
      });
    });

    t.test('a role change applies to the very next request', async (t) => {
      const x = await machine(svc, 'promoted', [[P, 'viewer']]);
      const membership = `/api/v1/projects/${P}/memberships/identities/${x.identityId}`;
      const write = () => api(svc, 'PATCH', '/api/v3/secrets/raw/SHARED', x.token, { ...w3, secretValue: 'by x' });
      const exp = () => api(svc, 'GET', `/api/v1/projects/${P}/export?environment=prod`, x.token);
      isError(t, await write(), 403, 'PermissionDenied', NOT_ALLOWED);
      t.equal((await api(svc, 'PATCH', membership, admin.token, { role: 'member' })).status, 200);
      t.equal((await write()).status, 200, 'viewer -> member: writes at once');
      isError(t, await exp(), 403, 'PermissionDenied', NOT_ALLOWED);
      t.equal((await api(svc, 'PATCH', membership, admin.token, { role: 'admin' })).status, 200);
      t.equal((await exp()).status, 200, 'member -> admin: exports at once');
      t.equal((await api(svc, 'PATCH', membership, admin.token, { role: 'viewer' })).status, 200);
      isError(t, await write(), 403, 'PermissionDenied', NOT_ALLOWED);
      isError(t, await exp(), 403, 'PermissionDenied', NOT_ALLOWED);
      t.equal((await api(svc, 'DELETE', membership, admin.token)).status, 200);
      isError(t, await api(svc, 'GET', `/api/v1/secret/${shared.id}/secret-versions`, x.token), 404, 'NotFound', `Secret with ID '${shared.id}' not found`);
    });

    t.test("an admin of project A gets nothing of project B's", async (t) => {
      const a = await machine(svc, 'a-admin', [[P, 'admin']]);
      const before = await state(svc);
      const intoB: Array<[string, Method, string, unknown?]> = [
        ['list by id', 'GET', `/api/v3/secrets/raw?workspaceId=${Q}&environment=prod`],
        ['list by slug', 'GET', '/api/v3/secrets/raw?workspaceSlug=other&environment=prod'],
        ['list on v4', 'GET', `/api/v4/secrets?projectId=${Q}&environment=prod`],
        ['get by id', 'GET', `/api/v3/secrets/raw/B_ONLY?workspaceId=${Q}&environment=prod`],
        ['get by slug', 'GET', '/api/v3/secrets/raw/B_ONLY?workspaceSlug=other&environment=prod'],
        ['get on v4', 'GET', `/api/v4/secrets/B_ONLY?projectId=${Q}&environment=prod`],
        ['create by id', 'POST', '/api/v3/secrets/raw/INTRUDER', { workspaceId: Q, environment: 'prod', secretValue: 'x' }],
        ['create by slug', 'POST', '/api/v3/secrets/raw/INTRUDER', { projectSlug: 'other', environment: 'prod', secretValue: 'x' }],
        ['create by workspaceSlug', 'POST', '/api/v3/secrets/raw/INTRUDER', { workspaceSlug: 'other', environment: 'prod', secretValue: 'x' }],
        ['create on v4', 'POST', '/api/v4/secrets/INTRUDER', { projectId: Q, environment: 'prod', secretValue: 'x' }],
        ['update by id', 'PATCH', '/api/v3/secrets/raw/B_ONLY', { workspaceId: Q, environment: 'prod', secretValue: 'x' }],
        ['update by slug', 'PATCH', '/api/v3/secrets/raw/B_ONLY', { projectSlug: 'other', environment: 'prod', secretValue: 'x' }],
        ['update on v4', 'PATCH', '/api/v4/secrets/B_ONLY', { projectId: Q, environment: 'prod', secretValue: 'x' }],
        ['delete by id', 'DELETE', `/api/v3/secrets/raw/B_ONLY?workspaceId=${Q}&environment=prod`],
        ['delete by slug', 'DELETE', '/api/v3/secrets/raw/B_ONLY', { projectSlug: 'other', environment: 'prod' }],
        ['delete on v4', 'DELETE', `/api/v4/secrets/B_ONLY?projectId=${Q}&environment=prod`],
        ['batch by id', 'POST', '/api/v3/secrets/batch/raw', { workspaceId: Q, environment: 'prod', secrets: [{ secretKey: 'INTRUDER', secretValue: 'x' }] }],
        ['batch by slug', 'POST', '/api/v3/secrets/batch/raw', { projectSlug: 'other', environment: 'prod', secrets: [{ secretKey: 'INTRUDER', secretValue: 'x' }] }],
        ['batch on v4', 'POST', '/api/v4/secrets/batch', { projectId: Q, environment: 'prod', secrets: [{ secretKey: 'INTRUDER', secretValue: 'x' }] }],
        ['versions by secret id', 'GET', `/api/v1/secret/${qSecret.id}/secret-versions`],
        ['versions by upper-case secret id', 'GET', `/api/v1/secret/${qSecret.id.toUpperCase()}/secret-versions`],
        ['restore by secret id', 'POST', `/api/v1/secret/${qSecret.id}/secret-versions/1/restore`, { overrideImmutable: true }],
        ['export', 'GET', `/api/v1/projects/${Q}/export?environment=prod`],
        ['export as csv', 'GET', `/api/v1/projects/${Q}/export?environment=prod&format=csv`],
      ];
      for (const [name, method, path, body] of intoB) {
        t.test(name, async (t) => {
          const r = await api(svc, method, path, a.token, body);
          isError(t, r, 404, 'NotFound', NOT_MEMBER);
          t.notOk(JSON.stringify(r.body).includes('project B value'));
        });
      }
      // B's names do not exist in A: naming A with B's secret finds nothing there.
      const inA: Array<[string, Method, string, unknown?]> = [
        ['get B_ONLY in A', 'GET', `/api/v3/secrets/raw/B_ONLY?workspaceId=${P}&environment=prod`],
        ['update B_ONLY in A', 'PATCH', '/api/v3/secrets/raw/B_ONLY', { workspaceId: P, environment: 'prod', secretValue: 'x' }],
        ['delete B_ONLY in A', 'DELETE', `/api/v4/secrets/B_ONLY?projectId=${P}&environment=prod`],
      ];
      for (const [name, method, path, body] of inA) {
        t.test(name, async (t) => isError(t, await api(svc, method, path, a.token, body), 404, 'NotFound', "Secret with name 'B_ONLY' not found"));
      }
      t.test('nothing changed in B (or anywhere)', async (t) => {
        t.same(await state(svc), before);
        const r = await api(svc, 'GET', `/api/v3/secrets/raw/B_ONLY?workspaceId=${Q}&environment=prod`, admin.token);
        t.same([r.body.secret.secretValue, r.body.secret.version], ['project B value', 1]);
      });
    });

    t.test('an unknown project is a 404 before any 403; an unknown secret id is a 404', async (t) => {
      const stranger = callers[4]![2];
      const missing = '00000000-0000-4000-8000-000000000000';
      const cases: Array<[string, Method, string, unknown, string | RegExp]> = [
        ['list by unknown slug', 'GET', '/api/v3/secrets/raw?workspaceSlug=nope&environment=prod', undefined, "Project with slug 'nope' not found"],
        ['list by unknown id', 'GET', `/api/v3/secrets/raw?workspaceId=${missing}&environment=prod`, undefined, /Project with ID/],
        ['get on v4', 'GET', `/api/v4/secrets/X?projectId=${missing}&environment=prod`, undefined, /Project with ID/],
        ['create by unknown slug', 'POST', '/api/v3/secrets/raw/X', { projectSlug: 'nope', environment: 'prod', secretValue: 'x' }, "Project with slug 'nope' not found"],
        ['update on v4', 'PATCH', '/api/v4/secrets/X', { projectId: missing, environment: 'prod', secretValue: 'x' }, /Project with ID/],
        ['delete', 'DELETE', `/api/v3/secrets/raw/X?workspaceId=${missing}&environment=prod`, undefined, /Project with ID/],
        ['batch', 'POST', '/api/v3/secrets/batch/raw', { workspaceId: missing, environment: 'prod', secrets: [{ secretKey: 'X', secretValue: 'x' }] }, /Project with ID/],
        ['versions', 'GET', `/api/v1/secret/${missing}/secret-versions`, undefined, /Secret with ID/],
        ['restore', 'POST', `/api/v1/secret/${missing}/secret-versions/1/restore`, undefined, /Secret with ID/],
        ['export', 'GET', `/api/v1/projects/${missing}/export?environment=prod`, undefined, /Project with ID/],
      ];
      for (const [name, method, path, body, message] of cases) {
        t.test(name, async (t) => isError(t, await api(svc, method, path, stranger, body), 404, 'NotFound', message));
      }
    });
  });
}
