// Temporary access on project memberships (issue 29 row 10, point 5), over HTTP on two
// replicas, at Infisical's paths: Terraform's infisical_project_identity
// (/api/v2/workspace/:projectId/identity-memberships/:identityId, body {projectId,
// identityId, roles:[{role, isTemporary, temporaryMode, temporaryRange,
// temporaryAccessStartTime}]}: terraform-provider-infisical internal/client/project_identity.go,
// model.go) and the v1 membership routes. A grant works, then refuses after its end on
// both replicas (also where the role is cached); a database writer cannot move its end;
// the audit trail records grant and end.
import { request as httpRequest } from 'node:http';
import t from 'tap';
import { ESO_LIST_QUERY, request } from '../../../helpers/http.js';
import { seedHomelab, startTestService, testEnv, type TestService } from '../../../helpers/service.js';
import { api, isError, machine, superadmin } from '../../admin/helpers.js';

const HOUR = 3_600_000;

/** A GET with a JSON body, as Go's resty sends it (fetch cannot). */
function getWithBody(url: string, token: string, json: unknown): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(json);
    const req = httpRequest(url, { method: 'GET', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => (text += c)).on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject).end(data);
  });
}
const GO_ZERO = '0001-01-01T00:00:00Z';

t.test('temporary access (postgres+redis, two replicas)', async (t) => {
  const env = await testEnv(t, 'postgres+redis');
  const A = await startTestService(t, env);
  const B = await startTestService(t, env);
  const as = (await superadmin(A)).token;
  const seeded = await seedHomelab(A.services);
  const P = seeded.projectId;
  const sql = A.services.store.sql;
  const v2 = (id: string) => `/api/v2/workspace/${P}/identity-memberships/${id}`;
  const read = (svc: TestService, token: string) => request(`${svc.url}/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { token });
  const temporary = (range: string, start: Date, role = 'viewer') => ({ role, isTemporary: true, temporaryMode: 'relative', temporaryRange: range, temporaryAccessStartTime: start.toISOString() });
  const events = async (type: string) => (await sql`select metadata from audit_log where event_type = ${type} order by id`).map((r) => r.metadata as Record<string, unknown>);

  await t.test('Terraform\'s permanent role (empty temporary fields) and the v2 routes', async (t) => {
    const x = await machine(A, 'tf');
    const body = { projectId: P, identityId: x.identityId, roles: [{ role: 'viewer', isTemporary: false, temporaryMode: '', temporaryRange: '', temporaryAccessStartTime: GO_ZERO }] };
    const created = await api(A, 'POST', v2(x.identityId), as, body);
    t.equal(created.status, 200, JSON.stringify(created.body));
    t.match(created.body.identityMembership, { id: String, identityId: x.identityId, roles: [{ role: 'viewer', isTemporary: false, temporaryRange: null, temporaryAccessEndTime: null }] });
    t.equal((await read(B, x.token)).status, 200);
    // Terraform's GET and DELETE carry {projectId, identityId} as a body.
    const got = await getWithBody(`${A.url}${v2(x.identityId)}`, as, { projectId: P, identityId: x.identityId });
    t.equal(got.status, 200, JSON.stringify(got.body));
    t.equal(got.body.identityMembership.identityId, x.identityId);
    const patched = await api(A, 'PATCH', v2(x.identityId), as, { ...body, roles: [{ ...body.roles[0], role: 'no-access' }] });
    t.equal(patched.status, 200, JSON.stringify(patched.body));
    t.equal(patched.body.roles[0].role, 'no-access');
    isError(t, await api(A, 'PATCH', v2(x.identityId), as, { ...body, identityId: '00000000-0000-4000-8000-000000000000' }), 422, undefined, /identityId must be the identity id in the path/);
    const deleted = await request(`${A.url}${v2(x.identityId)}`, { method: 'DELETE', token: as, json: { projectId: P, identityId: x.identityId } });
    t.equal(deleted.status, 200, JSON.stringify(deleted.body));
    t.equal((await api(A, 'GET', v2(x.identityId), as)).status, 404);
  });

  await t.test('bad temporary fields: 422 naming them, nothing written', async (t) => {
    const x = await machine(A, 'bad');
    const now = new Date();
    for (const [role, field] of [
      [{ ...temporary('1h', now), temporaryMode: '' }, 'temporaryMode'],
      [{ ...temporary('1h', now), temporaryMode: 'absolute' }, 'temporaryMode'],
      [{ ...temporary('', now) }, 'temporaryRange'],
      [{ ...temporary('1 fortnight', now) }, 'temporaryRange'],
      [{ ...temporary('0s', now) }, 'temporaryRange'],
      [{ ...temporary('11y', now) }, 'temporaryRange'],
      [{ ...temporary('1h', now), temporaryAccessStartTime: 'yesterday' }, 'temporaryAccessStartTime'],
      [{ ...temporary('1h', now), temporaryAccessStartTime: null }, 'temporaryAccessStartTime'],
      [{ role: 'viewer', temporaryRange: '1h' }, 'temporaryRange'],
      [{ role: 'viewer', isTemporary: false, temporaryMode: 'relative' }, 'temporaryMode'],
      [{ role: 'viewer', temporaryAccessStartTime: now.toISOString() }, 'temporaryAccessStartTime'],
    ] as const) {
      const r = await api(A, 'POST', v2(x.identityId), as, { roles: [role] });
      isError(t, r, 422, undefined, new RegExp(field));
    }
    t.equal((await sql`select count(*)::int as n from project_memberships where identity_id = ${x.identityId}`)[0]!.n, 0);
  });

  await t.test('a grant works, then ends by itself on every replica, cached or not', async (t) => {
    const x = await machine(A, 'temp');
    const start = new Date();
    const added = await api(A, 'POST', v2(x.identityId), as, { projectId: P, identityId: x.identityId, roles: [temporary('1h', start)] });
    t.equal(added.status, 200, JSON.stringify(added.body));
    t.match(added.body.identityMembership.roles[0], {
      isTemporary: true, temporaryMode: 'relative', temporaryRange: '1h',
      temporaryAccessStartTime: start.toISOString(), temporaryAccessEndTime: new Date(start.getTime() + HOUR).toISOString(),
    });
    // Both replicas now hold the role in their caches.
    t.equal((await read(A, x.token)).status, 200);
    t.equal((await read(B, x.token)).status, 200);
    const [grant] = await events('add-identity-to-project').then((e) => e.filter((m) => m.identityId === x.identityId));
    t.match(grant, { role: 'viewer', isTemporary: true, temporaryRange: '1h', temporaryAccessEndTime: new Date(start.getTime() + HOUR).toISOString() }, 'the grant is audited with its end');

    // The clock passes the end: no write, no invalidation, the cached role must still refuse.
    // Everything time-bound follows the database's clock, which each replica advances by the
    // process's monotonic clock between samples (storage/clock.ts); the replicas share this
    // process, so moving that clock moves both.
    const realPerfNow = performance.now.bind(performance);
    performance.now = () => realPerfNow() + HOUR + 60_000;
    try {
      isError(t, await read(A, x.token), 403, 'PermissionDenied');
      isError(t, await read(B, x.token), 403, 'PermissionDenied');
    } finally {
      performance.now = realPerfNow;
    }
    t.equal((await read(B, x.token)).status, 200, 'and before its end it still works');
  });

  await t.test('a grant set in the past refuses at once; its end is audited once; its end cannot be moved in the database', async (t) => {
    const x = await machine(A, 'past', [[P, 'viewer']]);
    t.equal((await read(B, x.token)).status, 200, 'B caches the permanent role');
    const start = new Date(Date.now() - 2 * HOUR);
    const patched = await api(A, 'PATCH', `/api/v1/projects/${P}/memberships/identities/${x.identityId}`, as, { roles: [temporary('1h', start, 'member')] });
    t.equal(patched.status, 200, JSON.stringify(patched.body));
    t.match(patched.body.roles[0], { role: 'member', isTemporary: true, temporaryAccessEndTime: new Date(start.getTime() + HOUR).toISOString() });
    isError(t, await read(A, x.token), 403, 'PermissionDenied');
    isError(t, await read(B, x.token), 403, 'PermissionDenied');

    // The sweep records the end once, whichever replica runs it.
    const before = (await events('membership-temporary-access-expired')).filter((m) => m.identityId === x.identityId).length;
    t.equal(before, 0);
    t.ok((await A.services.memberships.recordExpiries()) >= 1);
    t.equal(await B.services.memberships.recordExpiries(), 0, 'the other replica finds it recorded');
    const ended = (await events('membership-temporary-access-expired')).filter((m) => m.identityId === x.identityId);
    t.equal(ended.length, 1);
    t.match(ended[0], { role: 'member', temporaryRange: '1h', temporaryAccessEndTime: new Date(start.getTime() + HOUR).toISOString() });

    // A database writer moves the end into the future: the MAC covers it, so the row grants nothing.
    await sql`update project_memberships set temporary_access_end_time = now() + interval '1 day' where identity_id = ${x.identityId}`;
    A.services.caches.roles.clear();
    // A row whose MAC does not hold is no membership: answered as for a non-member (404).
    isError(t, await read(A, x.token), 404, 'NotFound');
  });
});
