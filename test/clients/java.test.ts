// Replay of Infisical's Java SDK (Infisical/java-sdk, src/main/java/com/infisical/sdk/resources/
// SecretsClient.java, FoldersClient.java, ProjectsClient.java, AuthClient.java): v3 raw list and
// get with camelCase includeImports (v3's own spelling is include_imports), bodies without
// nulls (Gson), folders on /api/v1/folders[/:id], project by slug, token revoke.
import t from 'tap';
import { replay, seedAppFolder } from './helpers.js';

t.test('secrets: list/get with includeImports (camelCase), create/update/delete', async (t) => {
  const r = await replay(t);
  await seedAppFolder(r);
  const pid = r.seeded.projectId;
  const list = await r.send('GET', '/api/v3/secrets/raw', { query: `workspaceId=${pid}&environment=prod&secretPath=%2F&expandSecretReferences=true&includeImports=true&recursive=false` });
  t.equal(list.status, 200, JSON.stringify(list.body));
  t.ok(Array.isArray(list.body.secrets), 'secrets[] (all the SDK returns)');
  t.same(list.body.imports.map((i: any) => i.secrets.map((s: any) => s.secretKey)), [['FROM_STAGING']], 'camelCase includeImports is honoured');
  const one = await r.send('GET', '/api/v3/secrets/raw/ROUTER_API_KEY', { query: `workspaceId=${pid}&environment=prod&secretPath=%2F&expandSecretReferences=true&includeImports=true` });
  t.equal(one.status, 200);
  t.equal(one.body.secret.secretKey, 'ROUTER_API_KEY');
  const created = await r.send('POST', '/api/v3/secrets/raw/JAVA_SECRET', { json: { environment: 'prod', workspaceId: pid, secretPath: '/', secretValue: 'j' } });
  t.equal(created.status, 200, JSON.stringify(created.body));
  const updated = await r.send('PATCH', '/api/v3/secrets/raw/JAVA_SECRET', { json: { environment: 'prod', workspaceId: pid, secretPath: '/', secretValue: 'k', newSecretName: 'JAVA_RENAMED' } });
  t.equal(updated.status, 200, JSON.stringify(updated.body));
  t.equal(updated.body.secret.secretKey, 'JAVA_RENAMED');
  const deleted = await r.send('DELETE', '/api/v3/secrets/raw/JAVA_RENAMED', { json: { environment: 'prod', workspaceId: pid, secretPath: '/' } });
  t.equal(deleted.status, 200, JSON.stringify(deleted.body));
});

t.test('folders, project by slug, token revoke', async (t) => {
  const r = await replay(t);
  const pid = r.seeded.projectId;
  const created = await r.send('POST', '/api/v1/folders', { json: { workspaceId: pid, environment: 'prod', name: 'java', path: '/' } });
  t.equal(created.status, 200, JSON.stringify(created.body));
  const got = await r.send('GET', `/api/v1/folders/${created.body.folder.id}`);
  t.equal(got.body.folder.name, 'java');
  const project = await r.send('GET', '/api/v1/projects/slug/homelab');
  t.equal(project.body.id, pid, 'GET /api/v1/projects/slug/:slug');
  const revoked = await r.send('POST', '/api/v1/auth/token/revoke', { token: null, json: { accessToken: r.token } });
  t.equal(revoked.status, 200, 'POST /api/v1/auth/token/revoke {accessToken}');
  const after = await r.send('GET', '/api/v1/projects/slug/homelab');
  t.equal(after.status, 401, 'the revoked token no longer works');
});
