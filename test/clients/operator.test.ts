// Replay of the Infisical Kubernetes operator (Infisical/kubernetes-operator). v1alpha1
// InfisicalSecret goes through go-sdk v0.8.0 (internal/util/secrets.go, internal/util/auth.go;
// go-sdk packages/api/secrets/list_secrets.go) with the project by slug from
// internal/api/api.go CallGetProjectBySlugV2, and the 304 handling in
// internal/services/infisicalsecret/reconciler.go; v1beta1 InfisicalStaticSecret uses its own
// resty call in internal/api/secrets_v4.go. The operator's User-Agent is `k8-operator`.
import t from 'tap';
import { SYSTEM } from '../../server/domain/access.js';
import { INVENTORY } from '../helpers/service.js';
import { replay, seedAppFolder } from './helpers.js';

const UA = { 'user-agent': 'k8-operator' };

t.test('v1alpha1 InfisicalSecret: projectSlug, then v3 raw list with If-None-Match', async (t) => {
  const r = await replay(t, 'viewer');
  await seedAppFolder(r);
  const project = await r.send('GET', '/api/v2/workspace/homelab', { headers: UA });
  t.equal(project.status, 200, 'GET /api/v2/workspace/:slug');
  t.equal(project.body.id, r.seeded.projectId, 'the project object itself (unwrapped): id');
  t.equal(project.body.slug, 'homelab');

  // go-sdk CallListSecretsWithETagV3 sets both workspaceId and workspaceSlug; the one the
  // CR does not use goes out empty. It always sets if-none-match (empty on the first call).
  const q = `workspaceId=&workspaceSlug=homelab&environment=prod&secretPath=%2F&expandSecretReferences=true&include_imports=true&recursive=false`;
  const first = await r.send('GET', '/api/v3/secrets/raw', { query: q, headers: { ...UA, 'if-none-match': '' } });
  t.equal(first.status, 200);
  const etag = first.headers.get('etag');
  t.ok(etag, 'an ETag (the go-sdk keeps it for the next resync)');
  t.same(Object.fromEntries(first.body.secrets.map((s: any) => [s.secretKey, s.secretValue])), INVENTORY, 'secrets[].secretKey/secretValue');
  t.same(first.body.imports.map((i: any) => i.secrets.map((s: any) => s.secretKey)), [['FROM_STAGING']], 'include_imports=true: imports[] (merged client-side)');

  const unchanged = await r.send('GET', '/api/v3/secrets/raw', { query: q, headers: { ...UA, 'if-none-match': etag! } });
  t.equal(unchanged.status, 304, '304: "Secrets unchanged (server ETag match), skipping reconciliation"');
  t.equal(unchanged.body, undefined, 'no body');

  await r.svc.services.secrets.create(SYSTEM, { project: { id: r.seeded.projectId }, environment: 'staging', secretPath: '/', key: 'NEW_IN_STAGING', value: 'n' });
  const afterImportWrite = await r.send('GET', '/api/v3/secrets/raw', { query: q, headers: { ...UA, 'if-none-match': etag! } });
  t.equal(afterImportWrite.status, 200, 'a write in the imported folder: a full answer, not 304');
  t.not(afterImportWrite.headers.get('etag'), etag, 'with a new ETag');

  const byId = await r.send('GET', '/api/v3/secrets/raw', { query: `workspaceId=${r.seeded.projectId}&workspaceSlug=&environment=prod&secretPath=%2F&expandSecretReferences=true&include_imports=true&recursive=false`, headers: UA });
  t.equal(byId.status, 200, 'scoped by projectId: workspaceSlug goes out empty');
  t.equal(byId.body.secrets.length, afterImportWrite.body.secrets.length, 'the same secrets');

  const recursive = await r.send('GET', '/api/v3/secrets/raw', { query: q.replace('recursive=false', 'recursive=true'), headers: UA });
  t.ok(recursive.body.secrets.some((s: any) => s.secretPath === '/app'), 'recursive=true');

  // A scope with secretName: a single read, without ETag support.
  const one = await r.send('GET', '/api/v3/secrets/raw/DB_URL', { query: `workspaceId=${r.seeded.projectId}&environment=prod&secretPath=%2Fapp&expandSecretReferences=true&include_imports=true&type=shared`, headers: UA });
  t.equal(one.status, 200);
  t.equal(one.body.secret.secretValue, 'pg://app@db');
});

t.test('v1alpha1 kubernetesAuth / universalAuth logins through the go-sdk', async (t) => {
  const r = await replay(t);
  const ua = await r.send('POST', '/api/v1/auth/universal-auth/login', { token: null, headers: UA, json: { clientId: r.seeded.clientId, clientSecret: r.seeded.clientSecret } });
  t.equal(ua.status, 200);
  // KubernetesRawServiceAccountTokenLogin: {identityId, jwt}. Not configured for this identity:
  // Infisical's own answer (test/server/auth covers the TokenReview flow itself).
  const k8s = await r.send('POST', '/api/v1/auth/kubernetes-auth/login', { token: null, headers: UA, json: { identityId: r.seeded.identityId, jwt: 'a.b.c' } });
  t.equal(k8s.status, 404, 'the route exists; the identity has no Kubernetes Auth');
  t.match(k8s.body.message, /Kubernetes Auth method not found/, 'the message says what is missing');
});

t.test('v1beta1 InfisicalStaticSecret: GET /api/v4/secrets without flags relies on v4 defaults (internal/api/secrets_v4.go)', async (t) => {
  const r = await replay(t, 'viewer');
  await seedAppFolder(r);
  const res = await r.send('GET', '/api/v4/secrets', { query: `projectId=${r.seeded.projectId}&environment=prod&secretPath=%2Fapp&recursive=false`, headers: UA });
  t.equal(res.status, 200);
  for (const s of res.body.secrets) for (const f of ['id', 'type', 'secretKey', 'environment', 'secretValue', 'secretPath']) t.ok(f in s, `secrets[].${f}`);
  t.equal(res.body.secrets.find((s: any) => s.secretKey === 'DB_URL').secretValue, 'pg://app@db', 'expandSecretReferences defaults to true on v4');
  const root = await r.send('GET', '/api/v4/secrets', { query: `projectId=${r.seeded.projectId}&environment=prod&secretPath=%2F&recursive=false`, headers: UA });
  t.same(root.body.imports.map((i: any) => [i.secretPath, i.environment, typeof i.folderId]), [['/', 'staging', 'string']], 'includeImports defaults to true on v4: imports[]{secretPath, environment, folderId}');
  const tagged = await r.send('GET', '/api/v4/secrets', { query: `projectId=${r.seeded.projectId}&environment=prod&secretPath=%2F&recursive=false&tagSlugs=none`, headers: UA });
  t.same(tagged.body.secrets, [], 'tagSlugs');
  const noAuth = await r.send('GET', '/api/v4/secrets', { query: `projectId=${r.seeded.projectId}&environment=prod&secretPath=%2F&recursive=false`, headers: UA, token: 'not-a-token' });
  t.equal(noAuth.status, 401, '401 → the operator reports unauthorized');
});
