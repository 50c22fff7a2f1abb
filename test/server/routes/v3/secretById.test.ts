// GET /api/v3/secrets/raw/id/:secretId (Terraform's `terraform import infisical_secret`;
// Infisical's backend/src/server/routes/v3/secret-router.ts): the same rules as the read by
// name. A value only for a caller who may read values at that environment and path; what
// the caller may not see (not a member of the project, a place it may not describe, a
// deleted secret) answers exactly as an unknown id; one it may describe but not read is
// the read by name's 403.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { SYSTEM } from '../../../../server/domain/access.js';
import { api, isError, machine, superadmin } from '../../admin/helpers.js';
import { startTestService, testEnv } from '../../../helpers/service.js';

t.test('a secret by id', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const admin = await superadmin(svc);
  const s = svc.services;
  const P = (await s.projects.create(SYSTEM, { name: 'byid' })).id;
  await s.folders.create(SYSTEM, { project: { id: P }, environment: 'prod', name: 'app' });
  const root = await s.secrets.create(SYSTEM, { project: { id: P }, environment: 'prod', key: 'ROOT_KEY', value: 'root-value' });
  const deep = await s.secrets.create(SYSTEM, { project: { id: P }, environment: 'prod', secretPath: '/app', key: 'APP_KEY', value: 'app-${ROOT_KEY}' });
  const describeOnly = await s.roles.create(SYSTEM, { id: P }, { slug: 'names-only', name: 'Names only', permissions: [{ subject: 'secrets', action: ['describeSecret'], conditions: { environment: 'prod' } }] });
  const rootReader = await s.roles.create(SYSTEM, { id: P }, { slug: 'root-reader', name: 'Root reader', permissions: [{ subject: 'secrets', action: ['read'], conditions: { environment: 'prod', secretPath: { $glob: '/' } } }] });

  const viewer = await machine(svc, 'viewer', [[P, 'viewer']]);
  const names = await machine(svc, 'names');
  await s.memberships.add(SYSTEM, { project: { id: P }, member: { kind: 'identity', id: names.identityId }, role: describeOnly.slug });
  const scoped = await machine(svc, 'scoped');
  await s.memberships.add(SYSTEM, { project: { id: P }, member: { kind: 'identity', id: scoped.identityId }, role: rootReader.slug });
  const own = (await s.projects.create(SYSTEM, { name: 'elsewhere' })).id;
  const stranger = await machine(svc, 'stranger', [[own, 'admin']]);
  const byId = (id: string, token: string) => api(svc, 'GET', `/api/v3/secrets/raw/id/${id}`, token);

  await t.test('a reader gets it with its value, as the read by name answers it', async (t) => {
    for (const token of [viewer.token, admin.token]) {
      const r = await byId(deep.id, token);
      t.equal(r.status, 200, JSON.stringify(r.body));
      t.equal(r.body.secret.id, deep.id);
      t.equal(r.body.secret.secretKey, 'APP_KEY');
      t.equal(r.body.secret.secretPath, '/app', 'secretPath');
      t.equal(r.body.secret.environment, 'prod');
      t.equal(r.body.secret.workspace, P);
      t.equal(r.body.secret.secretValue, 'app-${ROOT_KEY}', 'the value as stored (no expansion, as Infisical)');
      const byName = await api(svc, 'GET', `/api/v3/secrets/raw/APP_KEY?workspaceId=${P}&environment=prod&secretPath=%2Fapp`, token);
      t.same({ ...r.body.secret }, byName.body.secret, 'the same secret as the read by name');
    }
    const upper = await byId(root.id.toUpperCase(), viewer.token);
    t.equal(upper.status, 200, 'the id in capitals names the same secret');
  });

  await t.test('what the caller may not see answers as an unknown id', async (t) => {
    const unknown = randomUUID();
    const missing = await byId(unknown, viewer.token);
    isError(t, missing, 404, 'NotFound', `Secret with ID '${unknown}' not found`);
    const cases: Array<[string, string, string]> = [
      ['not a member of its project', root.id, stranger.token],
      ['a folder outside the role', deep.id, scoped.token],
    ];
    for (const [what, id, token] of cases) {
      const a = await byId(id, token);
      const b = await byId(unknown, token);
      isError(t, a, 404, 'NotFound');
      t.equal(a.body.message.replace(id, 'ID'), b.body.message.replace(unknown, 'ID'), `${what}: the unknown id's answer`);
      t.notMatch(JSON.stringify(a.body), new RegExp(`${P}|APP_KEY|ROOT_KEY|app-|root-value`), `${what}: nothing of it named`);
    }
    const inScope = await byId(root.id, scoped.token);
    t.equal(inScope.status, 200, 'the scoped role reads what is in its scope');
    t.equal(inScope.body.secret.secretValue, 'root-value');
  });

  await t.test('a caller who may see the name but not read the value: 403, no value', async (t) => {
    const r = await byId(root.id, names.token);
    isError(t, r, 403, 'PermissionDenied');
    t.notMatch(JSON.stringify(r.body), /root-value/, 'no value');
  });

  await t.test('malformed and deleted ids: 404 alike', async (t) => {
    for (const id of ['not-a-uuid', '1', encodeURIComponent("' or 1=1 --")]) {
      isError(t, await byId(id, viewer.token), 404, 'NotFound');
    }
    isError(t, await byId('x'.repeat(257), viewer.token), 422, 'ValidationFailure');
    const gone = await s.secrets.create(SYSTEM, { project: { id: P }, environment: 'prod', key: 'GONE', value: 'g' });
    t.equal((await byId(gone.id, viewer.token)).status, 200);
    await s.secrets.remove(SYSTEM, { project: { id: P }, environment: 'prod', key: 'GONE' });
    const after = await byId(gone.id, viewer.token);
    isError(t, after, 404, 'NotFound', `Secret with ID '${gone.id}' not found`);
  });

  await t.test('a renamed secret keeps its id', async (t) => {
    await s.secrets.update(SYSTEM, { project: { id: P }, environment: 'prod', key: 'ROOT_KEY', newKey: 'ROOT_RENAMED' });
    const r = await byId(root.id, viewer.token);
    t.equal(r.status, 200);
    t.equal(r.body.secret.secretKey, 'ROOT_RENAMED');
  });
});
