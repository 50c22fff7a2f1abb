// Replay of Infisical's Python SDK (infisicalsdk, Infisical/python-sdk-official):
// infisical_sdk/resources/secrets.py (v3 raw with include_imports; Python booleans in the
// query come out as True/False), infisical_requests.py (None values dropped from bodies),
// api_types.py (BaseSecret requires id, _id, workspace, environment, version, type,
// secretKey, secretValue, secretComment; folder models require createdAt, updatedAt, envId),
// and the v2 folders resource (create, list, get by id, update, delete with forceDelete).
import t from 'tap';
import { replay, seedAppFolder } from './helpers.js';

const BASE_SECRET = ['id', '_id', 'workspace', 'environment', 'version', 'type', 'secretKey', 'secretValue', 'secretComment'];

t.test('secrets: list/get with True/False, create/update/delete with type shared', async (t) => {
  const r = await replay(t);
  await seedAppFolder(r);
  const pid = r.seeded.projectId;
  const list = await r.send('GET', '/api/v3/secrets/raw', { query: `workspaceId=${pid}&environment=prod&secretPath=%2F&expandSecretReferences=True&include_imports=True&recursive=False` });
  t.equal(list.status, 200, JSON.stringify(list.body));
  for (const f of BASE_SECRET) t.ok(list.body.secrets.every((s: any) => f in s), `every secret has ${f} (BaseSecret requires it)`);
  t.same(list.body.imports[0].secrets.map((s: any) => s.secretKey), ['FROM_STAGING'], 'include_imports=True');
  const noImports = await r.send('GET', '/api/v3/secrets/raw', { query: `workspaceId=${pid}&environment=prod&secretPath=%2Fapp&expandSecretReferences=False&include_imports=False&recursive=False` });
  t.equal(noImports.body.secrets.find((s: any) => s.secretKey === 'DB_URL').secretValue, 'pg://${DB_USER}@db', 'expandSecretReferences=False');

  const one = await r.send('GET', '/api/v3/secrets/raw/DB_URL', { query: `workspaceId=${pid}&environment=prod&secretPath=%2Fapp&expandSecretReferences=True&include_imports=True&type=shared` });
  t.equal(one.status, 200);
  for (const f of BASE_SECRET) t.ok(f in one.body.secret, `secret.${f}`);
  t.equal(one.body.secret.secretValue, 'pg://app@db');

  const created = await r.send('POST', '/api/v3/secrets/raw/PY_SECRET', { json: { workspaceId: pid, environment: 'prod', secretPath: '/', secretValue: 'p', type: 'shared', secretComment: 'c', skipMultilineEncoding: false } });
  t.equal(created.status, 200, JSON.stringify(created.body));
  for (const f of BASE_SECRET) t.ok(f in created.body.secret, `created secret.${f}`);
  const updated = await r.send('PATCH', '/api/v3/secrets/raw/PY_SECRET', { json: { workspaceId: pid, environment: 'prod', secretPath: '/', secretValue: 'q', type: 'shared', newSecretName: 'PY_RENAMED' } });
  t.equal(updated.status, 200, JSON.stringify(updated.body));
  t.equal(updated.body.secret.secretKey, 'PY_RENAMED');
  const deleted = await r.send('DELETE', '/api/v3/secrets/raw/PY_RENAMED', { json: { workspaceId: pid, environment: 'prod', secretPath: '/', type: 'shared' } });
  t.equal(deleted.status, 200, JSON.stringify(deleted.body));
});

t.test('folders on /api/v2: create, list (recursive=False), get by id, update, delete with forceDelete', async (t) => {
  const r = await replay(t);
  const pid = r.seeded.projectId;
  const created = await r.send('POST', '/api/v2/folders', { json: { name: 'py', environment: 'prod', projectId: pid, path: '/' } });
  t.equal(created.status, 200, JSON.stringify(created.body));
  for (const f of ['id', 'name', 'createdAt', 'updatedAt', 'envId', 'path']) t.ok(f in created.body.folder, `folder.${f}`);
  const id = created.body.folder.id as string;
  const listed = await r.send('GET', '/api/v2/folders', { query: `projectId=${pid}&environment=prod&path=%2F&recursive=False` });
  t.equal(listed.status, 200, JSON.stringify(listed.body));
  for (const f of ['id', 'name', 'createdAt', 'updatedAt', 'envId']) t.ok(listed.body.folders.every((x: any) => f in x), `folders[].${f}`);
  const got = await r.send('GET', `/api/v2/folders/${id}`);
  t.equal(got.status, 200);
  for (const f of ['createdAt', 'updatedAt', 'envId']) t.ok(f in got.body.folder, `get: folder.${f}`);
  const updated = await r.send('PATCH', `/api/v2/folders/${id}`, { json: { name: 'py2', environment: 'prod', projectId: pid, path: '/' } });
  t.equal(updated.status, 200, JSON.stringify(updated.body));
  t.equal(updated.body.folder.name, 'py2');
  const deleted = await r.send('DELETE', `/api/v2/folders/${id}`, { json: { projectId: pid, environment: 'prod', path: '/', forceDelete: true } });
  t.equal(deleted.status, 200, JSON.stringify(deleted.body));
});
