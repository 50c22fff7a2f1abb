// Replay of Infisical's Go SDK (Infisical/go-sdk): packages/api/secrets/*.go (v3 raw list with
// ETag, retrieve, create, update, delete, batch), packages/api/folders/*.go, and
// packages/api/auth/models.go (organizationSlug with omitempty). ESO, the operator, the CLI and
// Terraform log in through it.
import t from 'tap';
import { replay } from './helpers.js';

t.test('secrets: list with If-None-Match (quoted, as the SDK normalises it), retrieve, create, update, delete, batch', async (t) => {
  const r = await replay(t);
  const pid = r.seeded.projectId;
  const q = `workspaceId=${pid}&workspaceSlug=&environment=prod&secretPath=%2F&expandSecretReferences=true&include_imports=false&recursive=false`;
  const first = await r.send('GET', '/api/v3/secrets/raw', { query: q, headers: { 'if-none-match': '' } });
  t.equal(first.status, 200);
  const etag = first.headers.get('etag')!;
  t.match(etag, /^(W\/)?"[^"]+"$/, 'a quoted ETag');
  const again = await r.send('GET', '/api/v3/secrets/raw', { query: q, headers: { 'if-none-match': etag } });
  t.equal(again.status, 304, 'NotModifiedError');

  const got = await r.send('GET', '/api/v3/secrets/raw/ROUTER_API_KEY', { query: `workspaceId=${pid}&environment=prod&secretPath=%2F&type=shared&expandSecretReferences=true&include_imports=true` });
  t.equal(got.status, 200);
  t.equal(got.body.secret.secretKey, 'ROUTER_API_KEY');

  const created = await r.send('POST', '/api/v3/secrets/raw/GO_SECRET', { json: { workspaceId: pid, environment: 'prod', secretPath: '/', secretValue: 'g', secretComment: '', type: 'shared', skipMultilineEncoding: false } });
  t.equal(created.status, 200, JSON.stringify(created.body));
  const updated = await r.send('PATCH', '/api/v3/secrets/raw/GO_SECRET', { json: { workspaceId: pid, environment: 'prod', secretPath: '/', secretValue: 'h', type: 'shared' } });
  t.equal(updated.status, 200, JSON.stringify(updated.body));
  const changed = await r.send('GET', '/api/v3/secrets/raw', { query: q, headers: { 'if-none-match': etag } });
  t.equal(changed.status, 200, 'after writes the old ETag no longer matches');
  const deleted = await r.send('DELETE', '/api/v3/secrets/raw/GO_SECRET', { json: { workspaceId: pid, environment: 'prod', secretPath: '/', type: 'shared' } });
  t.equal(deleted.status, 200, JSON.stringify(deleted.body));

  const batch = await r.send('POST', '/api/v3/secrets/batch/raw', {
    json: { workspaceId: pid, environment: 'prod', secretPath: '/', secrets: [{ secretKey: 'B1', secretValue: '1' }, { secretKey: 'B2', secretValue: '2' }] },
  });
  t.equal(batch.status, 200, JSON.stringify(batch.body));
  t.same(batch.body.secrets.map((s: any) => s.secretKey).sort(), ['B1', 'B2'], 'batch create');
});

t.test('folders: GET, POST, PATCH /:id, DELETE /:idOrName on /api/v1/folders', async (t) => {
  const r = await replay(t);
  const pid = r.seeded.projectId;
  const created = await r.send('POST', '/api/v1/folders', { json: { workspaceId: pid, environment: 'prod', name: 'go', path: '/' } });
  t.equal(created.status, 200, JSON.stringify(created.body));
  const id = created.body.folder.id as string;
  const listed = await r.send('GET', '/api/v1/folders', { query: `workspaceId=${pid}&environment=prod&path=%2F&recursive=false` });
  t.same(listed.body.folders.map((f: any) => f.id), [id]);
  const patched = await r.send('PATCH', `/api/v1/folders/${id}`, { json: { workspaceId: pid, environment: 'prod', name: 'go2', path: '/' } });
  t.equal(patched.body.folder.name, 'go2');
  const deleted = await r.send('DELETE', '/api/v1/folders/go2', { json: { workspaceId: pid, environment: 'prod', path: '/' } });
  t.equal(deleted.status, 200, 'delete by name');
});

t.test('universal auth: organizationSlug omitted when empty (omitempty)', async (t) => {
  const r = await replay(t);
  const res = await r.send('POST', '/api/v1/auth/universal-auth/login', { token: null, json: { clientId: r.seeded.clientId, clientSecret: r.seeded.clientSecret } });
  t.equal(res.status, 200);
  t.type(res.body.accessToken, 'string');
});
