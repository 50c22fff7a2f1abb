// A blank or empty name is a 422 on every create and every rename (secret, folder,
// project, environment), never a silent no-op and never a 500; and nothing is written.
import t from 'tap';
import { signupAdmin } from '../../helpers/admin.js';
import { request, type JsonResponse } from '../../helpers/http.js';
import { startTestService, testEnv } from '../../helpers/service.js';

t.test('blank and empty names are refused with 422 everywhere', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  const admin = await signupAdmin(svc.url);
  const call = (method: string, path: string, json?: unknown) => request(`${svc.url}${path}`, { method, token: admin.token, json });
  const project = (await call('POST', '/api/v1/projects', { projectName: 'named' })).body.project;
  const P = project.id as string;
  const envId = project.environments.find((e: any) => e.slug === 'dev').id as string;
  await call('POST', '/api/v3/secrets/raw/KEPT', { workspaceId: P, environment: 'dev', secretValue: 'v' });
  const folder = (await call('POST', '/api/v2/folders', { projectId: P, environment: 'dev', path: '/', name: 'kept' })).body.folder;
  const before = JSON.stringify(await svc.services.store.sql`select (select count(*) from projects) p, (select count(*) from environments) e,
    (select count(*) from folders) f, (select count(*) from secrets) s, (select string_agg(name || slug, ',' order by id) from projects) pn,
    (select string_agg(name || slug, ',' order by id) from environments) en, (select string_agg(path, ',' order by id) from folders) fp,
    (select string_agg(key, ',' order by id) from secrets) sk`);

  const refused = (r: JsonResponse, what: string) => {
    t.equal(r.status, 422, `${what}: 422 (got ${r.status} ${JSON.stringify(r.body)})`);
    t.equal(r.body?.error, 'ValidationFailure', what);
  };
  for (const blank of ['', '   ', '\t']) {
    const b = JSON.stringify(blank);
    refused(await call('POST', '/api/v1/projects', { projectName: blank }), `project create ${b}`);
    refused(await call('PATCH', `/api/v1/projects/${P}`, { name: blank }), `project rename ${b}`);
    refused(await call('POST', `/api/v1/projects/${P}/environments`, { name: blank, slug: 'qa' }), `environment create ${b}`);
    refused(await call('PATCH', `/api/v1/projects/${P}/environments/${envId}`, { name: blank }), `environment rename ${b}`);
    refused(await call('PATCH', `/api/v1/projects/${P}/environments/${envId}`, { slug: blank }), `environment re-slug ${b}`);
    refused(await call('POST', '/api/v2/folders', { projectId: P, environment: 'dev', path: '/', name: blank }), `folder create ${b}`);
    refused(await call('PATCH', `/api/v2/folders/${folder.id}`, { projectId: P, environment: 'dev', path: '/', name: blank }), `folder rename ${b}`);
    refused(await call('PATCH', '/api/v3/secrets/raw/KEPT', { workspaceId: P, environment: 'dev', newSecretName: blank }), `secret rename ${b}`);
    refused(await call('PATCH', '/api/v4/secrets/KEPT', { projectId: P, environment: 'dev', newSecretName: blank }), `secret rename v4 ${b}`);
    refused(await call('POST', '/api/v3/secrets/batch/raw', { workspaceId: P, environment: 'dev', secrets: [{ secretKey: blank, secretValue: 'x' }] }), `batch create ${b}`);
    if (blank !== '') {
      // An empty path segment does not reach the route at all; a blank one does.
      refused(await call('POST', `/api/v3/secrets/raw/${encodeURIComponent(blank)}`, { workspaceId: P, environment: 'dev', secretValue: 'x' }), `secret create ${b}`);
      refused(await call('POST', `/api/v4/secrets/${encodeURIComponent(blank)}`, { projectId: P, environment: 'dev', secretValue: 'x' }), `secret create v4 ${b}`);
    }
  }
  const after = JSON.stringify(await svc.services.store.sql`select (select count(*) from projects) p, (select count(*) from environments) e,
    (select count(*) from folders) f, (select count(*) from secrets) s, (select string_agg(name || slug, ',' order by id) from projects) pn,
    (select string_agg(name || slug, ',' order by id) from environments) en, (select string_agg(path, ',' order by id) from folders) fp,
    (select string_agg(key, ',' order by id) from secrets) sk`);
  t.equal(after, before, 'nothing was written');
});
