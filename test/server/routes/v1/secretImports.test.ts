// Secret imports over HTTP, at Infisical's paths: create, list, move, re-point, delete;
// include_imports on the v3 and v4 lists and on single reads; cycles refused; nested
// imports; references relative to the folder a secret lives in; a write to the source
// seen through the import by another replica on its next read; bad input refused with
// nothing written.
import t from 'tap';
import { startService } from '../../../../server/app.js';
import { parseConfig } from '../../../../server/config.js';
import { compileRules, SYSTEM } from '../../../../server/domain/access.js';
import { request, type JsonResponse } from '../../../helpers/http.js';
import { INVENTORY, login, quietLog, seedHomelab, startTestService, testEnv } from '../../../helpers/service.js';

t.test('secret imports', async (t) => {
  const env = await testEnv(t, 'postgres+redis');
  const svc = await startTestService(t, env);
  // A second replica on the same database and Redis.
  const B = await startService(parseConfig(env), quietLog);
  t.teardown(() => B.close());
  const urlB = `http://127.0.0.1:${B.port}`;
  const seeded = await seedHomelab(svc.services, { role: 'admin' });
  const token = await login(svc.url, seeded);
  const project = { id: seeded.projectId };
  const sql = svc.services.store.sql;
  const put = (environment: string, secretPath: string, key: string, value: string) =>
    svc.services.secrets.create(SYSTEM, { project, environment, secretPath, key, value });
  await svc.services.folders.create(SYSTEM, { project, environment: 'staging', parentPath: '/', name: 'shared' });
  await svc.services.folders.create(SYSTEM, { project, environment: 'dev', parentPath: '/', name: 'base' });
  await put('staging', '/shared', 'SHARED_URL', 'https://shared.example');
  await put('staging', '/shared', 'ROUTER_API_KEY', 'from-staging'); // also a local key of prod /
  await put('staging', '/shared', 'BOTH', 'staging-both');
  await put('staging', '/shared', 'SELF_REF', 'url=${SHARED_URL}');
  await put('dev', '/base', 'BASE_ONLY', 'base');
  await put('dev', '/base', 'BOTH', 'dev-both');

  const imports = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', json?: unknown, id = '', query = '') =>
    request(`${svc.url}/api/v1/secret-imports${id ? `/${id}` : ''}${query}`, { method, token, json });
  const create = (environment: string, path: string, from: { environment: string; path: string }) =>
    imports('POST', { workspaceId: seeded.projectId, environment, path, import: from });
  const listRaw = (base: string, extra = '') =>
    request(`${base}/api/v3/secrets/raw?workspaceId=${seeded.projectId}&environment=prod&secretPath=%2F&include_imports=true${extra}`, { token });
  const importRows = async () => Number((await sql<{ n: string }[]>`select count(*)::text as n from secret_imports`)[0]!.n);
  const mustBe = (res: JsonResponse, status: number, what: string) => {
    if (res.status !== status) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };

  let sharedId = '';
  let baseId = '';

  await t.test('create and list, in Infisical\'s shape', async (t) => {
    const created = mustBe(await create('prod', '/', { environment: 'staging', path: '/shared' }), 200, 'create');
    t.equal(created.message, 'Successfully created secret import');
    t.match(created.secretImport, { importPath: '/shared', position: 1, isReplication: false, importEnv: { slug: 'staging', name: 'Staging' } });
    sharedId = created.secretImport.id;
    const second = mustBe(await create('prod', '/', { environment: 'dev', path: '/base/' }), 200, 'second');
    t.equal(second.secretImport.position, 2, 'appended after the first');
    t.equal(second.secretImport.importPath, '/base', 'the path is normalised');
    baseId = second.secretImport.id;
    const listed = mustBe(await imports('GET', undefined, '', `?workspaceId=${seeded.projectId}&environment=prod&path=%2F`), 200, 'list');
    t.same(listed.secretImports.map((i: any) => [i.importEnv.slug, i.importPath, i.position]), [['staging', '/shared', 1], ['dev', '/base', 2]]);
  });

  await t.test('include_imports on the v3 and v4 lists: the imports in order, with their values', async (t) => {
    const off = mustBe(await request(`${svc.url}/api/v3/secrets/raw?workspaceId=${seeded.projectId}&environment=prod&include_imports=false`, { token }), 200, 'off');
    t.same(off.imports, [], 'include_imports=false: none');
    for (const res of [
      await listRaw(svc.url),
      // v4 expands references by default: asked not to here, to compare with v3.
      await request(`${svc.url}/api/v4/secrets?projectId=${seeded.projectId}&environment=prod&secretPath=%2F&include_imports=true&expandSecretReferences=false`, { token }),
    ]) {
      const body = mustBe(res, 200, 'list');
      t.equal(body.secrets.length, Object.keys(INVENTORY).length, 'the folder\'s own secrets unchanged');
      t.same(body.imports.map((i: any) => [i.environment, i.secretPath]), [['staging', '/shared'], ['dev', '/base']]);
      const shared = Object.fromEntries(body.imports[0].secrets.map((s: any) => [s.secretKey, s.secretValue]));
      t.same(shared, { BOTH: 'staging-both', ROUTER_API_KEY: 'from-staging', SELF_REF: 'url=${SHARED_URL}', SHARED_URL: 'https://shared.example' }, 'values opened, references left as written without expandSecretReferences');
      t.equal(body.imports[0].secrets[0].environment, 'staging');
      t.equal(body.imports[0].secrets[0].secretPath, '/shared');
      t.notOk('createdAt' in body.imports[0].secrets[0], 'imported secrets carry no dates, as in Infisical');
      t.equal(typeof body.imports[0].folderId, 'string');
    }
    const hidden = mustBe(await listRaw(svc.url, '&viewSecretValue=false'), 200, 'hidden');
    t.ok(hidden.imports[0].secrets.every((s: any) => s.secretValueHidden && s.secretValue === '<hidden-by-infisical>'), 'viewSecretValue=false hides imported values too');
  });

  await t.test('references: an imported value expands in its own folder; a reference may point into an imported folder', async (t) => {
    await put('prod', '/', 'POINTS_IN', 'x-${staging.shared.SHARED_URL}');
    const body = mustBe(await listRaw(svc.url, '&expandSecretReferences=true'), 200, 'expanded');
    t.equal(body.imports[0].secrets.find((s: any) => s.secretKey === 'SELF_REF').secretValue, 'url=https://shared.example');
    t.equal(body.secrets.find((s: any) => s.secretKey === 'POINTS_IN').secretValue, 'x-https://shared.example');
  });

  await t.test('single reads fall back to the imports with include_imports; the last import holding the key wins', async (t) => {
    const one = (name: string, extra: string) => request(`${svc.url}/api/v3/secrets/raw/${name}?workspaceId=${seeded.projectId}&environment=prod&secretPath=%2F${extra}`, { token });
    t.equal((await one('SHARED_URL', '')).status, 404, 'not without include_imports');
    const got = mustBe(await one('SHARED_URL', '&include_imports=true'), 200, 'imported');
    t.match(got.secret, { secretKey: 'SHARED_URL', secretValue: 'https://shared.example', environment: 'staging', secretPath: '/shared' });
    t.equal(mustBe(await one('BOTH', '&include_imports=true'), 200, 'both').secret.secretValue, 'dev-both', 'position 2 (dev /base) wins over position 1');
    t.equal(mustBe(await one('ROUTER_API_KEY', '&include_imports=true'), 200, 'local').secret.secretValue, INVENTORY.ROUTER_API_KEY, 'the folder\'s own key wins');
    t.equal(mustBe(await one('SELF_REF', '&include_imports=true&expandSecretReferences=true'), 200, 'ref').secret.secretValue, 'url=https://shared.example', 'expanded in its own folder');
    t.equal((await one('NOWHERE', '&include_imports=true')).status, 404);
    t.equal(mustBe(await one('SHARED_URL', '&includeImports=true'), 200, 'sdk name').secret.secretValue, 'https://shared.example', 'the SDK\'s includeImports is the same flag');
    const disagree = await one('SHARED_URL', '&include_imports=true&includeImports=false');
    t.equal(disagree.status, 422, 'the two names disagreeing is refused, not resolved silently');
  });

  await t.test('reorder: PATCH position', async (t) => {
    const moved = mustBe(await imports('PATCH', { workspaceId: seeded.projectId, environment: 'prod', path: '/', import: { position: 1 } }, baseId), 200, 'move');
    t.equal(moved.secretImport.position, 1);
    const body = mustBe(await listRaw(svc.url), 200, 'list');
    t.same(body.imports.map((i: any) => i.environment), ['dev', 'staging'], 'the list follows the new order');
    const one = mustBe(await request(`${svc.url}/api/v3/secrets/raw/BOTH?workspaceId=${seeded.projectId}&environment=prod&include_imports=true`, { token }), 200, 'both');
    t.equal(one.secret.secretValue, 'staging-both', 'staging is last now, and wins');
    const back = mustBe(await imports('PATCH', { workspaceId: seeded.projectId, environment: 'prod', path: '/', import: { position: 2 } }, baseId), 200, 'back');
    t.equal(back.secretImport.position, 2);
  });

  await t.test('nested imports: a source\'s own imports come with it; cycles are refused with 422', async (t) => {
    await svc.services.folders.create(SYSTEM, { project, environment: 'dev', parentPath: '/', name: 'deep' });
    await put('dev', '/deep', 'DEEP_ONLY', 'deep');
    mustBe(await create('staging', '/shared', { environment: 'dev', path: '/deep' }), 200, 'nested');
    const body = mustBe(await listRaw(svc.url), 200, 'list');
    t.same(body.imports.map((i: any) => i.secretPath), ['/shared', '/base'], 'still two imports');
    t.ok(body.imports[0].secrets.some((s: any) => s.secretKey === 'DEEP_ONLY' && s.environment === 'dev' && s.secretValue === 'deep'), 'dev /deep comes through staging /shared');

    const before = await importRows();
    for (const [environment, path, from, what] of [
      ['dev', '/deep', { environment: 'prod', path: '/' }, 'three-step cycle'],
      ['staging', '/shared', { environment: 'prod', path: '/' }, 'two-step cycle'],
      ['prod', '/', { environment: 'prod', path: '/' }, 'itself'],
    ] as const) {
      const res = await create(environment, path, from);
      t.equal(res.status, 422, what);
      t.equal(res.body.error, 'ValidationFailure', what);
    }
    const repoint = await imports('PATCH', { workspaceId: seeded.projectId, environment: 'prod', path: '/', import: { environment: 'prod', path: '/' } }, sharedId);
    t.equal(repoint.status, 422, 're-pointing into a cycle is refused too');
    t.equal(await importRows(), before, 'nothing written');
  });

  await t.test('a write to the source is seen through the import by the other replica on its next read', async (t) => {
    const valueOnB = async () => {
      const body = mustBe(await listRaw(urlB), 200, 'B');
      return body.imports[0].secrets.find((s: any) => s.secretKey === 'SHARED_URL')?.secretValue;
    };
    t.equal(await valueOnB(), 'https://shared.example', 'B warmed');
    await svc.services.secrets.update(SYSTEM, { project, environment: 'staging', secretPath: '/shared', key: 'SHARED_URL', value: 'https://moved.example' });
    t.equal(await valueOnB(), 'https://moved.example', 'B sees the new value at once');
    const nestedOnB = async () => (mustBe(await listRaw(urlB), 200, 'B').imports[0].secrets as any[]).find((s) => s.secretKey === 'DEEP_ONLY')?.secretValue;
    t.equal(await nestedOnB(), 'deep');
    await svc.services.secrets.update(SYSTEM, { project, environment: 'dev', secretPath: '/deep', key: 'DEEP_ONLY', value: 'deeper' });
    t.equal(await nestedOnB(), 'deeper', 'a write two imports away too');
  });

  await t.test('an import whose source the caller may not read is left out, never a 500', async (t) => {
    // A scoped role that reads prod / only (compiled by the real rules engine): the
    // import of staging /shared is outside it. The role is set on this request's grant.
    const access = svc.services.access;
    const original = access.authorize;
    const scoped = { role: 'prod-root-reader', rules: compileRules([{ subject: 'secrets', action: ['read'], conditions: { environment: 'prod', secretPath: { $glob: '/' } } }]) };
    access.authorize = async (...args: Parameters<typeof original>) => ({ ...(await original(...args)), access: scoped });
    t.teardown(() => void (access.authorize = original));
    const body = mustBe(await listRaw(svc.url), 200, 'list');
    t.same(body.imports, [], 'left out');
    t.equal((await request(`${svc.url}/api/v3/secrets/raw/SHARED_URL?workspaceId=${seeded.projectId}&environment=prod&include_imports=true`, { token })).status, 404, 'not found through an import it may not read');
    access.authorize = original;
  });

  await t.test('bad input: 4xx naming the problem, nothing written', async (t) => {
    const before = await importRows();
    const at = { workspaceId: seeded.projectId, environment: 'prod', path: '/' };
    const cases: [unknown, number, RegExp][] = [
      [{ ...at }, 422, /import/],
      [{ ...at, import: { environment: 'staging' } }, 422, /import\.path/],
      [{ ...at, import: { environment: 'staging', path: '/shared', extra: 1 } }, 422, /extra|unrecognized/i],
      [{ ...at, import: 'staging:/shared' }, 422, /import/],
      [{ ...at, isReplication: true, import: { environment: 'dev', path: '/' } }, 422, /isReplication/],
      [{ ...at, import: { environment: 'nope', path: '/' } }, 404, /nope/],
      [{ ...at, import: { environment: 'dev', path: '/missing' } }, 404, /missing/],
      [{ ...at, import: { environment: 'dev', path: '/../x' } }, 422, /path/i],
      [{ ...at, import: { environment: 'staging', path: '/shared' } }, 400, /already imported/],
      [{ ...at, path: '/nowhere', import: { environment: 'dev', path: '/' } }, 404, /nowhere/],
      [{ ...at, workspaceId: undefined, import: { environment: 'dev', path: '/' } }, 422, /projectId/],
    ];
    for (const [json, status, message] of cases) {
      const res = await imports('POST', json);
      t.equal(res.status, status, JSON.stringify(json));
      t.match(res.body.message, message, JSON.stringify(json));
    }
    const patch = (id: string, json: unknown) => imports('PATCH', json, id);
    t.equal((await patch(sharedId, { ...at, import: { position: 3 } })).status, 422, 'position past the end');
    t.equal((await patch(sharedId, { ...at, import: { position: 0 } })).status, 422, 'position 0');
    t.equal((await patch(sharedId, { ...at, import: { position: 1.5 } })).status, 422, 'position not an integer');
    t.equal((await patch('not-a-uuid', { ...at, import: { position: 1 } })).status, 404, 'an id that is not one');
    t.equal((await patch('00000000-0000-4000-8000-000000000000', { ...at, import: { position: 1 } })).status, 404, 'an unknown id');
    t.equal((await patch(sharedId, { ...at, environment: 'dev', import: { position: 1 } })).status, 404, 'another folder\'s import is not found here');
    t.equal(await importRows(), before, 'nothing written');
  });

  await t.test('members of other projects and viewers cannot change imports', async (t) => {
    const viewer = await seedViewer();
    const res = await request(`${svc.url}/api/v1/secret-imports`, { method: 'POST', token: viewer, json: { workspaceId: seeded.projectId, environment: 'prod', path: '/', import: { environment: 'dev', path: '/' } } });
    t.equal(res.status, 403);
    const listed = await request(`${svc.url}/api/v1/secret-imports?workspaceId=${seeded.projectId}&environment=prod`, { token: viewer });
    t.equal(listed.status, 200, 'a viewer lists them');
  });

  await t.test('delete: gone from the list and the reads; the others renumbered', async (t) => {
    const removed = mustBe(await imports('DELETE', { workspaceId: seeded.projectId, environment: 'prod', path: '/' }, sharedId), 200, 'delete');
    t.equal(removed.secretImport.id, sharedId);
    t.equal(removed.secretImport.importEnv.slug, 'staging');
    const listed = mustBe(await imports('GET', undefined, '', `?workspaceId=${seeded.projectId}&environment=prod`), 200, 'list');
    t.same(listed.secretImports.map((i: any) => [i.importPath, i.position]), [['/base', 1]]);
    const onB = mustBe(await listRaw(urlB), 200, 'B');
    t.same(onB.imports.map((i: any) => i.secretPath), ['/base'], 'replica B no longer answers it');
    t.equal((await imports('DELETE', { workspaceId: seeded.projectId, environment: 'prod', path: '/' }, sharedId)).status, 404, 'twice: 404');
  });

  async function seedViewer() {
    const identity = await svc.services.identities.create(SYSTEM, { name: 'viewer' });
    const ua = await svc.services.identities.attachUniversalAuth(SYSTEM, identity.id);
    const { clientSecret } = await svc.services.identities.createClientSecret(SYSTEM, identity.id);
    await svc.services.memberships.upsertIdentity(SYSTEM, { project, identityId: identity.id, role: 'viewer' });
    return login(svc.url, { clientId: ua.clientId, clientSecret });
  }
});
