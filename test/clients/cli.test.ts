// Replay of the Infisical CLI (Infisical/cli), incl. `infisical agent` and `infisical proxy`,
// which ship in the same binary. Sources: packages/api/api.go (CallGetSecretsV4, the v3 raw
// create/update/delete calls, folders, tags), packages/api/model.go (request/answer fields),
// packages/util/secrets.go (SetRawSecrets), packages/cmd/run.go, export.go, secrets.go,
// login.go, agent.go (FuncMap, MonitorSecretChanges), packages/proxy/* and cmd/proxy.go.
// The npm package @infisical/cli cannot install here (its preinstall fetches from GitHub).
import t from 'tap';
import { INVENTORY } from '../helpers/service.js';
import { replay, seedAppFolder } from './helpers.js';

/** CallGetSecretsV4's query: camelCase, every flag spelled out (v4 defaults them to true). */
const v4Query = (projectId: string, o: { secretPath?: string; includeImports?: boolean; recursive?: boolean; expand?: boolean } = {}) =>
  new URLSearchParams({
    projectId,
    environment: 'prod',
    secretPath: o.secretPath ?? '/',
    includeImports: String(o.includeImports ?? true),
    recursive: String(o.recursive ?? false),
    expandSecretReferences: String(o.expand ?? true),
    includePersonalOverrides: 'true',
  }).toString();

t.test('infisical login --method=universal-auth (go-sdk UniversalAuthLogin, cmd/login.go)', async (t) => {
  const r = await replay(t);
  const res = await r.send('POST', '/api/v1/auth/universal-auth/login', { token: null, json: { clientId: r.seeded.clientId, clientSecret: r.seeded.clientSecret } });
  t.equal(res.status, 200);
  t.type(res.body.accessToken, 'string', 'accessToken (what --plain prints)');
  t.type(res.body.expiresIn, 'number');
  t.type(res.body.accessTokenMaxTTL, 'number');
  t.equal(res.body.tokenType, 'Bearer');
  const withOrg = await r.send('POST', '/api/v1/auth/universal-auth/login', { token: null, json: { clientId: r.seeded.clientId, clientSecret: r.seeded.clientSecret, organizationSlug: 'my-org' } });
  t.equal(withOrg.status, 200, 'organizationSlug (sent when set) is accepted');
});

t.test('infisical run / export / secrets get: GET /api/v4/secrets, camelCase query, the same fields as a JSON body', async (t) => {
  const r = await replay(t);
  await seedAppFolder(r);
  const q = v4Query(r.seeded.projectId);
  // The CLI also puts these fields as a JSON body on the GET (SetBody); fetch cannot send a
  // body on a GET, so this replay sends the query, which carries the same fields.
  const res = await r.send('GET', '/api/v4/secrets', { query: q });
  t.equal(res.status, 200, JSON.stringify(res.body));
  for (const s of res.body.secrets) {
    for (const f of ['_id', 'version', 'workspace', 'type', 'environment', 'secretKey', 'secretValue', 'secretComment', 'secretPath', 'skipMultilineEncoding', 'tags']) {
      t.ok(f in s, `secrets[].${f}`);
    }
  }
  t.same(Object.fromEntries(res.body.secrets.map((s: any) => [s.secretKey, s.secretValue])), INVENTORY, 'the folder\'s own secrets');
  t.equal(res.body.imports.length, 1, 'includeImports=true (camelCase) brings the import');
  const imp = res.body.imports[0];
  for (const f of ['secretPath', 'environment', 'folderId', 'secrets']) t.ok(f in imp, `imports[].${f}`);
  for (const f of ['id', 'workspace', 'environment', 'version', 'type', 'secretKey', 'secretValue', 'secretComment']) t.ok(f in imp.secrets[0], `imports[].secrets[].${f}`);
  t.same(imp.secrets.map((s: any) => s.secretKey), ['FROM_STAGING']);
  t.match(res.headers.get('etag'), /^(W\/)?"[^"]+"$/, 'an ETag header (the Agent and --watch compare it)');

  const noImports = await r.send('GET', '/api/v4/secrets', { query: v4Query(r.seeded.projectId, { includeImports: false }) });
  t.same(noImports.body.imports, [], 'includeImports=false is honoured (the CLI sends it explicitly)');
  const app = await r.send('GET', '/api/v4/secrets', { query: v4Query(r.seeded.projectId, { secretPath: '/app' }) });
  t.equal(app.body.secrets.find((s: any) => s.secretKey === 'DB_URL').secretValue, 'pg://app@db', 'expandSecretReferences=true');
  const unexpanded = await r.send('GET', '/api/v4/secrets', { query: v4Query(r.seeded.projectId, { secretPath: '/app', expand: false }) });
  t.equal(unexpanded.body.secrets.find((s: any) => s.secretKey === 'DB_URL').secretValue, 'pg://${DB_USER}@db', 'expandSecretReferences=false');
  const rec = await r.send('GET', '/api/v4/secrets', { query: v4Query(r.seeded.projectId, { recursive: true, includeImports: false }) });
  t.equal(rec.body.secrets.length, Object.keys(INVENTORY).length + 2, 'recursive=true (run --recursive)');
  const tagged = await r.send('GET', '/api/v4/secrets', { query: `${q}&tagSlugs=nope` });
  t.same(tagged.body.secrets, [], 'tagSlugs filters (run --tags)');
});

t.test('infisical secrets set: tag by slug (404 → create), then v3 raw create and update (util/secrets.go SetRawSecrets)', async (t) => {
  const r = await replay(t);
  const pid = r.seeded.projectId;
  const missing = await r.send('GET', `/api/v1/projects/${pid}/tags/slug/team-a`);
  t.equal(missing.status, 404, 'an unknown tag slug is a 404 (the CLI then creates it)');
  const made = await r.send('POST', `/api/v1/projects/${pid}/tags`, { json: { slug: 'team-a', color: '' } });
  t.equal(made.status, 200, JSON.stringify(made.body));
  const found = await r.send('GET', `/api/v1/projects/${pid}/tags/slug/team-a`);
  t.equal(found.status, 200);
  const tagId = (found.body.tag ?? found.body.workspaceTag).id as string;
  t.type(tagId, 'string', 'the tag id it passes on');

  const created = await r.send('POST', '/api/v3/secrets/raw/CLI_SET', {
    json: { workspaceId: pid, type: 'shared', environment: 'prod', secretPath: '/', secretValue: 'one', secretComment: '', skipMultilineEncoding: false, tagIds: [tagId] },
  });
  t.equal(created.status, 200, JSON.stringify(created.body));
  t.equal(created.body.secret.secretKey, 'CLI_SET');
  const updated = await r.send('PATCH', '/api/v3/secrets/raw/CLI_SET', { json: { workspaceId: pid, environment: 'prod', secretPath: '/', secretValue: 'two', type: 'shared', tagIds: [tagId] } });
  t.equal(updated.status, 200, JSON.stringify(updated.body));
  const listed = await r.send('GET', '/api/v4/secrets', { query: v4Query(pid) });
  t.equal(listed.body.secrets.find((s: any) => s.secretKey === 'CLI_SET').secretValue, 'two', 'the value the list then shows');
});

t.test('infisical secrets delete: {secretName, workspaceId, environment, type: "personal" (the default), secretPath}', async (t) => {
  const r = await replay(t);
  const res = await r.send('DELETE', '/api/v3/secrets/raw/ROUTER_API_KEY', {
    json: { secretName: 'ROUTER_API_KEY', workspaceId: r.seeded.projectId, environment: 'prod', type: 'personal', secretPath: '/' },
  });
  t.not(res.status, 500, 'never a 500');
  // As Infisical answers it (backend secret-v2-bridge-service deleteSecret): a personal
  // secret belongs to a person, so a machine identity's personal delete is refused, and
  // the shared secret of the same name is left alone (the CLI's `--type shared` deletes it).
  t.equal(res.status, 400, JSON.stringify(res.body));
  t.match(res.body, { error: 'BadRequest', message: 'Must be user to delete personal secret' });
  const still = await r.send('GET', '/api/v3/secrets/raw/ROUTER_API_KEY', { query: `workspaceId=${r.seeded.projectId}&environment=prod` });
  t.equal(still.status, 200, 'the shared secret is still there');
  const shared = await r.send('DELETE', '/api/v3/secrets/raw/LLM_API_KEY', {
    json: { secretName: 'LLM_API_KEY', workspaceId: r.seeded.projectId, environment: 'prod', type: 'shared', secretPath: '/' },
  });
  t.equal(shared.status, 200, '--type shared with secretName');
});

t.test('infisical secrets folders get|create|delete (api.go CallGetFoldersV1, CallCreateFolderV1, CallDeleteFolderV1)', async (t) => {
  const r = await replay(t);
  const pid = r.seeded.projectId;
  const created = await r.send('POST', '/api/v1/folders', { json: { name: 'cli-folder', workspaceId: pid, environment: 'prod', path: '/' } });
  t.equal(created.status, 200, JSON.stringify(created.body));
  t.equal(created.body.folder.name, 'cli-folder', 'folder.name');
  t.type(created.body.folder.id, 'string', 'folder.id');
  const listed = await r.send('GET', '/api/v1/folders', { query: `environment=prod&workspaceId=${pid}&directory=%2F` });
  t.equal(listed.status, 200);
  t.same(listed.body.folders.map((f: any) => f.name), ['cli-folder'], 'folders[].name, with the old `directory` spelling');
  const deleted = await r.send('DELETE', '/api/v1/folders/cli-folder', { json: { folderName: 'cli-folder', workspaceId: pid, environment: 'prod', directory: '/' } });
  t.equal(deleted.status, 200, JSON.stringify(deleted.body));
  const after = await r.send('GET', '/api/v1/folders', { query: `environment=prod&workspaceId=${pid}&directory=%2F` });
  t.same(after.body.folders, [], 'gone');
});

t.test('connectivity check GET /api/status', async (t) => {
  const r = await replay(t);
  const res = await r.send('GET', '/api/status', { token: null });
  t.equal(res.status, 200);
});

t.test('infisical agent: token renew, getSecretByName, and re-render on ETag change (cmd/agent.go)', async (t) => {
  const r = await replay(t);
  const pid = r.seeded.projectId;
  const renewed = await r.send('POST', '/api/v1/auth/token/renew', { token: null, json: { accessToken: r.token } });
  t.equal(renewed.status, 200, 'RefreshAccessToken: POST /api/v1/auth/token/renew {accessToken}');
  t.type(renewed.body.accessToken, 'string');
  t.type(renewed.body.expiresIn, 'number');

  const single = await r.send('GET', '/api/v4/secrets/ROUTER_API_KEY', { query: `projectId=${pid}&environment=prod&secretPath=%2F&includeImports=true&expandSecretReferences=true&type=shared` });
  t.equal(single.status, 200);
  t.equal(single.body.secret.secretValue, INVENTORY.ROUTER_API_KEY, 'getSecretByName: secret.secretValue');

  // MonitorSecretChanges: re-render only when the ETag differs from the last one.
  const q = `projectId=${pid}&environment=prod&secretPath=%2F&includeImports=true`;
  const first = await r.send('GET', '/api/v4/secrets', { query: q });
  const again = await r.send('GET', '/api/v4/secrets', { query: q });
  t.ok(first.headers.get('etag'), 'an ETag');
  t.equal(again.headers.get('etag'), first.headers.get('etag'), 'unchanged data: the same ETag (no re-render)');
  await r.send('PATCH', '/api/v3/secrets/raw/ROUTER_API_KEY', { json: { workspaceId: pid, environment: 'prod', secretPath: '/', secretValue: 'rotated', type: 'shared' } });
  const changed = await r.send('GET', '/api/v4/secrets', { query: q });
  t.not(changed.headers.get('etag'), first.headers.get('etag'), 'a write: a new ETag (the Agent re-renders and runs its command)');
  t.equal(changed.body.secrets.find((s: any) => s.secretKey === 'ROUTER_API_KEY').secretValue, 'rotated');

  const bySlug = await r.send('GET', '/api/v1/projects/slug/homelab');
  t.equal(bySlug.status, 200, 'listSecretsByProjectSlug: GET /api/v1/projects/slug/:slug');
  t.equal(bySlug.body.id, pid, 'the project, unwrapped');
});

t.test('infisical proxy: login at …/login/ (trailing slash), cached v3/v4 GETs revalidate with If-None-Match', async (t) => {
  const r = await replay(t);
  const res = await r.send('POST', '/api/v1/auth/universal-auth/login/', { token: null, json: { clientId: r.seeded.clientId, clientSecret: r.seeded.clientSecret } });
  t.equal(res.status, 200, 'the trailing slash is ignored');
  const q = `projectId=${r.seeded.projectId}&environment=prod&secretPath=%2F`;
  const v4 = await r.send('GET', '/api/v4/secrets', { query: q, token: res.body.accessToken });
  const tag = v4.headers.get('etag')!;
  const notModified = await r.send('GET', '/api/v4/secrets', { query: q, token: res.body.accessToken, headers: { 'if-none-match': tag } });
  t.equal(notModified.status, 304, 'v4 list: 304 on a matching If-None-Match');
  const v3 = await r.send('GET', '/api/v3/secrets/raw', { query: `workspaceId=${r.seeded.projectId}&environment=prod&secretPath=%2F`, token: res.body.accessToken });
  t.equal(v3.status, 200);
  const v3Again = await r.send('GET', '/api/v3/secrets/raw', { query: `workspaceId=${r.seeded.projectId}&environment=prod&secretPath=%2F`, token: res.body.accessToken, headers: { 'if-none-match': v3.headers.get('etag')! } });
  t.equal(v3Again.status, 304, 'v3 list: 304 too');
});
