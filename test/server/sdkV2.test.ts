// Infisical's Node SDK 2.3.5 (npm @infisical/sdk@2.3.5, installed as @infisical/sdk-v2),
// unchanged: a thin JS wrapper over a Rust core (@infisical/sdk-linux-x64-gnu) that makes
// its own HTTP requests. Its read paths (universal-auth login, listSecrets and getSecret
// with every option) against the running service, through a recording forwarder so the
// Rust core's own query spellings are pinned beside the answers.
import { createRequire } from 'node:module';
import t from 'tap';
import { SYSTEM } from '../../server/domain/access.js';
import { startRecordingProxy } from '../helpers/recordingProxy.js';
import { INVENTORY, seedHomelab, startTestService, testEnv } from '../helpers/service.js';

interface V2Secret { secretKey: string; secretValue: string; secretPath?: string | null; environment: string; version: number; type: string; workspace: string }
interface V2Client {
  listSecrets(o: Record<string, unknown>): Promise<V2Secret[]>;
  getSecret(o: Record<string, unknown>): Promise<V2Secret>;
}
const require = createRequire(import.meta.url);
const { InfisicalClient } = require('@infisical/sdk-v2') as { InfisicalClient: new (s: Record<string, unknown>) => V2Client };

t.test('SDK 2.3.5 (Rust core): login, listSecrets, getSecret', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  const seeded = await seedHomelab(svc.services);
  const project = { id: seeded.projectId };
  await svc.services.folders.create(SYSTEM, { project, environment: 'prod', name: 'app' });
  await svc.services.secrets.create(SYSTEM, { project, environment: 'prod', secretPath: '/app', key: 'DB_USER', value: 'app' });
  await svc.services.secrets.create(SYSTEM, { project, environment: 'prod', secretPath: '/app', key: 'DB_URL', value: 'pg://${DB_USER}@db' });
  await svc.services.secrets.create(SYSTEM, { project, environment: 'staging', secretPath: '/', key: 'FROM_STAGING', value: 'imported' });
  await svc.services.secretImports.create(SYSTEM, { project, environment: 'prod', path: '/app', import: { environment: 'staging', path: '/' } });

  const proxy = await startRecordingProxy(t, svc.url);
  const client = new InfisicalClient({ siteUrl: proxy.url, auth: { universalAuth: { clientId: seeded.clientId, clientSecret: seeded.clientSecret } }, cacheTtl: 0 });
  const at = { projectId: seeded.projectId, environment: 'prod' };

  const listed = await client.listSecrets({ ...at, path: '/' });
  t.same(Object.fromEntries(listed.map((s) => [s.secretKey, s.secretValue])), INVENTORY, 'listSecrets: the 14 inventory secrets');
  const login = proxy.seen.find((r) => r.path.startsWith('/api/v1/auth/universal-auth/login'));
  t.ok(login, 'the core logged in with universal auth');
  t.equal(login?.method, 'POST');
  t.same(Object.keys(JSON.parse(login?.body ?? '{}')).sort(), ['clientId', 'clientSecret'], 'login body');
  const list = proxy.seen.find((r) => r.path === '/api/v3/secrets/raw');
  t.ok(list, 'listSecrets is GET /api/v3/secrets/raw');
  t.equal(list?.query.get('workspaceId'), seeded.projectId, 'workspaceId');
  t.equal(list?.query.get('environment'), 'prod');
  t.equal(list?.query.get('secretPath'), '/');
  t.match(list?.headers['user-agent'], /infisical-nodejs-sdk/, 'its User-Agent');
  // As the core sends it: environment, expandSecretReferences, include_imports, recursive,
  // secretPath, workspaceId.
  t.same([...(list?.query.keys() ?? [])].sort(), ['environment', 'expandSecretReferences', 'include_imports', 'recursive', 'secretPath', 'workspaceId'], 'the list query keys');

  await t.test('listSecrets options', async (t) => {
    const app = await client.listSecrets({ ...at, path: '/app', includeImports: false });
    t.same(app.map((s) => s.secretKey).sort(), ['DB_URL', 'DB_USER'], 'includeImports: false');
    t.equal(app.find((s) => s.secretKey === 'DB_URL')?.secretValue, 'pg://app@db', 'expandSecretReferences defaults to true');
    const raw = await client.listSecrets({ ...at, path: '/app', includeImports: false, expandSecretReferences: false });
    t.equal(raw.find((s) => s.secretKey === 'DB_URL')?.secretValue, 'pg://${DB_USER}@db', 'expandSecretReferences: false');
    const withImports = await client.listSecrets({ ...at, path: '/app', includeImports: true });
    t.same(withImports.map((s) => s.secretKey).sort(), ['DB_URL', 'DB_USER', 'FROM_STAGING'], 'includeImports: true merges the import');
    const deep = await client.listSecrets({ ...at, path: '/', recursive: true, includeImports: false });
    t.equal(deep.length, Object.keys(INVENTORY).length + 2, 'recursive: true');
    const spelled = proxy.seen.filter((r) => r.path === '/api/v3/secrets/raw').map((r) => r.url);
    t.ok(spelled.some((u) => /[?&]include_imports=true/.test(u)), 'the core spells include_imports (snake case)');
    t.ok(spelled.some((u) => /[?&]recursive=true/.test(u)), 'and recursive');
    t.ok(spelled.some((u) => /[?&]expandSecretReferences=false/.test(u)), 'and expandSecretReferences');

    const before = process.env.DB_USER;
    t.teardown(() => {
      if (before === undefined) delete process.env.DB_USER;
      else process.env.DB_USER = before;
    });
    await client.listSecrets({ ...at, path: '/app', attachToProcessEnv: true });
    t.equal(process.env.DB_USER, 'app', 'attachToProcessEnv');
  });

  await t.test('getSecret options', async (t) => {
    const one = await client.getSecret({ ...at, path: '/', secretName: 'ROUTER_API_KEY' });
    t.equal(one.secretValue, INVENTORY.ROUTER_API_KEY, 'getSecret');
    t.equal(one.secretKey, 'ROUTER_API_KEY');
    t.equal(one.type, 'shared');
    t.equal(one.workspace, seeded.projectId);
    const shared = await client.getSecret({ ...at, path: '/', secretName: 'ROUTER_API_KEY', type: 'shared' });
    t.equal(shared.secretValue, INVENTORY.ROUTER_API_KEY, 'type: shared');
    // The 2.3.5 core never puts expandSecretReferences on a single read, whatever the option
    // says: the answer is v3's default for an absent flag (unexpanded), as on Infisical.
    const raw = await client.getSecret({ ...at, path: '/app', secretName: 'DB_URL', expandSecretReferences: false });
    t.equal(raw.secretValue, 'pg://${DB_USER}@db', 'expandSecretReferences: false');
    const expanded = await client.getSecret({ ...at, path: '/app', secretName: 'DB_URL', expandSecretReferences: true });
    t.equal(expanded.secretValue, 'pg://${DB_USER}@db', 'expandSecretReferences: true is not sent by the core: v3 leaves the reference');
    const imported = await client.getSecret({ ...at, path: '/app', secretName: 'FROM_STAGING', includeImports: true });
    t.equal(imported.secretValue, 'imported', 'includeImports: true finds it through the import');
    await t.rejects(client.getSecret({ ...at, path: '/', secretName: 'NOPE' }), 'a missing secret is an error');
    const gets = proxy.seen.filter((r) => r.path.startsWith('/api/v3/secrets/raw/'));
    t.ok(gets.length >= 5, 'getSecret is GET /api/v3/secrets/raw/:name');
    t.ok(gets.every((r) => !r.query.has('expandSecretReferences')), 'the core sends no expandSecretReferences on getSecret');
    t.ok(gets.every((r) => r.query.get('type') === 'shared' && r.query.has('include_imports')), 'it always sends type=shared and include_imports');
    t.ok(gets.every((r) => r.status === 200 || r.status === 404), 'no other status on the way');
  });
});
