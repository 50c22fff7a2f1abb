// No silent no-ops: every route that takes a body refuses a field it does not declare,
// with a 422 naming it, before anything happens. Driven from the service's own route
// table, so a new route is covered the day it is added. The exceptions: the Universal,
// JWT, OIDC and Kubernetes Auth logins ignore unknown fields (CONTRACT.md; Infisical's clients send
// organizationSlug), and logout never reads its body.
import t from 'tap';
import { ADMIN, ADMIN_LOGIN, signupAdmin } from '../../helpers/admin.js';
import { request } from '../../helpers/http.js';
import { startTestService, testEnv } from '../../helpers/service.js';

const EXEMPT = new Set([
  'POST /api/v1/auth/universal-auth/login',
  'POST /api/v1/auth/jwt-auth/login',
  'POST /api/v1/auth/oidc-auth/login',
  'POST /api/v1/auth/kubernetes-auth/login',
  'POST /api/v1/auth/logout',
]);
const FIELD = 'zzNotAField';

/** A value for each path parameter that passes its schema (the handler never runs). */
function fill(path: string): string {
  return path.replace(/:([A-Za-z]+)/g, (_m, name: string) => (name === 'version' ? '1' : name === 'slug' ? 'some-slug' : '00000000-0000-4000-8000-000000000000'));
}

t.test('every route with a body refuses an undeclared field by name', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const admin = await signupAdmin(svc.url);
  const changing = svc.routes.filter((r) => r.method === 'POST' || r.method === 'PATCH' || r.method === 'PUT' || (r.method === 'DELETE' && r.body));
  t.ok(changing.length > 30, `${changing.length} routes`);
  const before = await svc.services.store.sql`select count(*)::int as n from audit_log`;
  for (const r of changing) {
    const route = `${r.method} ${r.path}`;
    if (route === 'POST /api/v1/auth/logout') {
      const session = (await request(`${svc.url}/api/v3/auth/login`, { method: 'POST', json: ADMIN_LOGIN })).body.token as string;
      const res = await request(`${svc.url}${r.path}`, { method: r.method, token: session, json: { [FIELD]: 1 } });
      t.equal(res.status, 200, `${route}: the body is not read`);
      continue;
    }
    if (EXEMPT.has(route)) {
      const ua = route.includes('universal-auth');
      const creds = ua ? { clientId: '00000000-0000-4000-8000-000000000000', clientSecret: 'f'.repeat(64) } : { identityId: '00000000-0000-4000-8000-000000000000', jwt: 'a.b.c' };
      const res = await request(`${svc.url}${r.path}`, { method: r.method, json: { ...creds, organizationSlug: 'x', [FIELD]: 1 } });
      // Past the body: bad credentials (Universal Auth), no such method on the identity (JWT / OIDC Auth).
      t.equal(res.status, ua ? 401 : 404, `${route}: unknown fields ignored, as the contract says`);
      continue;
    }
    const res = await request(`${svc.url}${fill(r.path)}`, { method: r.method, token: admin.token, json: { [FIELD]: 1 } });
    t.equal(res.status, 422, `${route}: ${JSON.stringify(res.body)}`);
    t.match(JSON.stringify([res.body.message, res.body.details]), FIELD, `${route}: the field is named`);
  }
  const after = await svc.services.store.sql<{ eventType: string }[]>`select event_type from audit_log order by id offset ${before[0]!.n}`;
  t.same(after.map((e) => e.eventType), ['login-user', 'logout-user'], 'nothing changed but the exempt logout');
  t.ok(ADMIN);
});

t.test('the fields Infisical clients send are applied or refused, never dropped', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const admin = (await signupAdmin(svc.url)).token;
  const call = (method: string, path: string, json: unknown) => request(`${svc.url}${path}`, { method, token: admin, json });

  // @infisical/sdk creates projects with a type; a secret manager is what a project is here.
  const created = await call('POST', '/api/v1/projects', { projectName: 'sdk-made', type: 'secret-manager', template: 'default' });
  t.equal(created.status, 200, JSON.stringify(created.body));
  const projectId = created.body.project.id as string;
  t.match((await call('POST', '/api/v1/projects', { projectName: 'kms', type: 'kms' })).body, { statusCode: 422, message: /type/ });
  t.match((await call('POST', '/api/v1/projects', { projectName: 'described', projectDescription: 'x' })).body, { statusCode: 422, message: /projectDescription/ });

  // The SDK sends projectId and workspaceId together (the same id).
  const scope = { projectId, workspaceId: projectId, environment: 'dev', secretPath: '/' };
  t.equal((await call('POST', '/api/v3/secrets/raw/A', { ...scope, secretValue: '1', tagIds: [], type: 'shared' })).status, 200, 'empty tagIds: no tags, as asked');
  t.match((await call('POST', '/api/v3/secrets/raw/B', { ...scope, secretValue: '1', tagIds: ['t1'] })).body, { statusCode: 422, message: /tagIds/ });
  t.match((await call('POST', '/api/v3/secrets/raw/B', { ...scope, secretValue: '1', secretReminderNote: 'rotate' })).body, { statusCode: 422, message: /secretReminderNote/ });
  t.match((await call('POST', '/api/v3/secrets/raw/B', { ...scope, secretValue: '1', overrideImmutable: true })).body, { statusCode: 422, message: /overrideImmutable/ }, 'nothing to override on a create');
  const other = (await call('POST', '/api/v1/projects', { projectName: 'other' })).body.project.id as string;
  t.match((await call('POST', '/api/v3/secrets/raw/B', { ...scope, workspaceId: other, secretValue: '1' })).body, { statusCode: 422, message: 'workspaceId and projectId name different projects' });
  t.match((await call('POST', '/api/v3/secrets/raw/B', { workspaceId: projectId, projectSlug: 'other', environment: 'dev', secretValue: '1' })).body, { statusCode: 422, message: /by id or by slug, not both/ });
  t.equal((await call('POST', '/api/v3/secrets/raw/B', { projectId, environment: 'dev', secretValue: '1' })).status, 200, 'v3 takes projectId alone too');
  t.match((await request(`${svc.url}/api/v4/secrets?projectId=${projectId}&workspaceSlug=other&environment=dev`, { token: admin })).body, { statusCode: 422 }, 'v4: a slug is refused, not ignored');
  const batch = await call('POST', '/api/v4/secrets/batch', { projectId, environment: 'dev', secrets: [{ secretKey: 'C', secretValue: '1', colour: 'red' }] });
  t.match(batch.body, { statusCode: 422, message: /colour/ }, 'batch items are strict too');

  // Folders: `path` and the older `directory` must agree; the SDK's description is refused.
  const folder = { projectId, environment: 'dev', name: 'app' };
  t.match((await call('POST', '/api/v2/folders', { ...folder, path: '/', directory: '/x' })).body, { statusCode: 422, message: 'path and directory name different folders' });
  t.match((await call('POST', '/api/v2/folders', { ...folder, path: '/', description: 'd' })).body, { statusCode: 422, message: /description/ });
  t.equal((await call('POST', '/api/v2/folders', { ...folder, path: '/', directory: '/' })).status, 200);

  // A DELETE reads its fields from the body or the query; other query parameters are tolerated.
  const del = await request(`${svc.url}/api/v4/secrets/A?projectId=${projectId}&environment=dev&utm_source=x`, { method: 'DELETE', token: admin });
  t.equal(del.status, 200, JSON.stringify(del.body));
  t.equal((await call('DELETE', `/api/v4/secrets/B`, { projectId, environment: 'dev', utm_source: 'x' })).status, 422, 'but not in the body');

  // A POST that takes no body: {} is fine, a field is refused.
  const id = (await call('POST', '/api/v1/identities', { name: 'm' })).body.identity.id as string;
  t.equal((await call('POST', `/api/v1/auth/universal-auth/identities/${id}`, {})).status, 200);
  const cs = (await call('POST', `/api/v1/auth/universal-auth/identities/${id}/client-secrets`, {})).body.clientSecretData.id as string;
  const revoke = `/api/v1/auth/universal-auth/identities/${id}/client-secrets/${cs}/revoke`;
  t.match((await call('POST', revoke, { reason: 'leaked' })).body, { statusCode: 422, message: /"reason"; this request takes no body fields/ });
  t.equal((await call('POST', revoke, {})).status, 200);
});
