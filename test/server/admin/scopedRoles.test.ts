// The scoped-role leak matrix: an identity whose custom role reads `prod` `/` only drives
// EVERY route of the API (reads and writes), and nothing outside its scope leaks: no
// value, no name (secret, folder), no id, no count (list lengths, folder lists, history),
// and refusals of things outside the scope answer the same whether they exist or not.
// Writes are refused and change nothing. A second role (read/write under /app/**, with
// a deny on /app/locked/**) checks create/edit/delete per environment and path.
// Also covered: secret imports (prod / imports staging /leakshared and dev /, both outside
// the scope), tags (a tag on secrets inside and outside the scope) and the JWT/OIDC Auth
// configuration routes (superadmin only).
// Matrix size (the t.comment at the end prints it): 445 requests driven as the scoped
// identity, 326 of the answers searched for leaks (was 171 before imports, tags and JWT/OIDC).
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { SYSTEM } from '../../../server/domain/access.js';
import type { JsonResponse } from '../../helpers/http.js';
import { startIssuer } from '../../helpers/issuer.js';
import { startTestService, testEnv } from '../../helpers/service.js';
import { api, isError, machine, snapshot, superadmin, type Method } from './helpers.js';

t.test('an identity scoped to prod / leaks nothing outside it', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const admin = await superadmin(svc);
  const s = svc.services;
  const project = await s.projects.create(SYSTEM, { name: 'scoped' });
  const P = project.id;
  const put = (environment: string, secretPath: string, key: string, value: string) =>
    s.secrets.create(SYSTEM, { project: { id: P }, environment, secretPath, key, value });
  const folder = (environment: string, parentPath: string, name: string) => s.folders.create(SYSTEM, { project: { id: P }, environment, parentPath, name });

  // In scope (prod /).
  const inA = await put('prod', '/', 'IN_A', 'in-scope-a');
  await put('prod', '/', 'IN_REF', '${IN_A}-suffix');
  // Outside: every name, value and folder name holds "leak" so any answer can be searched.
  await folder('prod', '/', 'leakfolder');
  await folder('prod', '/leakfolder', 'leakdeep');
  await folder('dev', '/', 'leakdevfolder');
  const outs = [
    await put('prod', '/leakfolder', 'LEAK_SUB', 'leak-value-sub'),
    await put('prod', '/leakfolder/leakdeep', 'LEAK_DEEP', 'leak-value-deep'),
    await put('dev', '/', 'LEAK_DEV', 'leak-value-dev'),
    await put('staging', '/', 'LEAK_STG', 'leak-value-stg'),
    await put('dev', '/leakdevfolder', 'LEAK_DEVSUB', 'leak-value-devsub'),
  ];
  const sub = outs[0]!;
  // A second version of an out-of-scope secret (its history must not leak either).
  await s.secrets.update(SYSTEM, { project: { id: P }, environment: 'prod', secretPath: '/leakfolder', key: 'LEAK_SUB', value: 'leak-value-sub-v2' });
  const leakIds = outs.map((o) => o.id);

  const role = await s.roles.create(SYSTEM, { id: P }, {
    slug: 'prod-root-reader',
    name: 'Prod root reader',
    permissions: [{ subject: 'secrets', action: ['read'], conditions: { environment: 'prod', secretPath: { $glob: '/' } } }],
  });
  const scoped = await machine(svc, 'scoped-eso');
  await s.memberships.add(SYSTEM, { project: { id: P }, member: { kind: 'identity', id: scoped.identityId }, role: role.slug });
  const T = scoped.token;

  let cases = 0;
  /** Nothing of what lies outside the scope in the answer: names, values, folder names, ids. */
  const clean = (t: Tap, what: string, r: JsonResponse, sentId?: string) => {
    cases++;
    // An id the caller sent may come back in a "not found" (as an unknown one does).
    const text = JSON.stringify(r.body).replaceAll(sentId ?? '\u0000', 'SENT-ID');
    t.notMatch(text, /leak/i, `${what}: no out-of-scope name, value or folder`);
    for (const id of leakIds) t.notOk(text.includes(id), `${what}: no out-of-scope id`);
  };
  type Tap = typeof t;
  let driven = 0;
  const call = (method: Method, path: string, json?: unknown) => {
    driven++;
    return api(svc, method, path, T, json);
  };
  /** Two refusals that must not tell apart "exists" from "does not": same status and body but the request id. */
  const same = (t: Tap, what: string, a: JsonResponse, b: JsonResponse) => {
    const strip = (r: JsonResponse) => ({ status: r.status, body: { ...r.body, reqId: undefined } });
    t.same(strip(a), strip(b), `${what}: existing and missing answer alike`);
  };

  const q3 = (env: string, path: string, extra = '') => `workspaceId=${P}&environment=${env}&secretPath=${encodeURIComponent(path)}${extra}`;
  const q4 = (env: string, path: string, extra = '') => `projectId=${P}&environment=${env}&secretPath=${encodeURIComponent(path)}${extra}`;
  const lists = (env: string, path: string, extra = '') => [
    `/api/v3/secrets/raw?${q3(env, path, extra)}`,
    `/api/v4/secrets?${q4(env, path, extra)}`,
  ];

  await t.test('lists in scope answer exactly what is in scope', async (t) => {
    const variants = ['', '&recursive=true', '&expandSecretReferences=true', '&viewSecretValue=false', '&include_imports=true', '&recursive=true&expandSecretReferences=true'];
    for (const v of variants) {
      for (const path of lists('prod', '/', v)) {
        const r = await call('GET', path);
        t.equal(r.status, 200, `${path}: 200`);
        clean(t, path, r);
        t.same(r.body.secrets.map((x: any) => x.secretKey).sort(), ['IN_A', 'IN_REF'], `${path}: exactly the in-scope names (no count of the rest)`);
        t.same(r.body.imports, [], 'no imports');
        const ref = r.body.secrets.find((x: any) => x.secretKey === 'IN_REF');
        if (v.includes('viewSecretValue=false')) t.equal(ref.secretValue, '<hidden-by-infisical>');
        // v4 expands references unless told not to (its default, as Infisical's CLI relies on); v3 only when asked.
        else t.equal(ref.secretValue, v.includes('expand') || path.startsWith('/api/v4/') ? 'in-scope-a-suffix' : '${IN_A}-suffix', 'a reference inside the scope expands');
      }
    }
    const bySlug = await call('GET', '/api/v3/secrets/raw?workspaceSlug=scoped&environment=prod');
    t.equal(bySlug.status, 200);
    clean(t, 'list by slug', bySlug);
    t.equal(bySlug.body.secrets.length, 2);
  });

  await t.test('lists outside the scope are refused alike, existing or not', async (t) => {
    const outside: Array<[env: string, existing: string, missing: string]> = [
      ['prod', '/leakfolder', '/nofolder'],
      ['prod', '/leakfolder/leakdeep', '/nofolder/nodeep'],
      ['dev', '/', '/'],
      ['dev', '/leakdevfolder', '/nofolder'],
      ['staging', '/', '/'],
    ];
    for (const [env, existing, missing] of outside) {
      for (const extra of ['', '&recursive=true', '&viewSecretValue=false']) {
        const [e3, e4] = lists(env, existing, extra);
        const [m3, m4] = lists(env, missing, extra);
        for (const [a, b] of [[e3!, m3!], [e4!, m4!]] as const) {
          const ra = await call('GET', a);
          const rb = await call('GET', b);
          isError(t, ra, 403, 'PermissionDenied');
          clean(t, a, ra);
          same(t, a, ra, rb);
        }
      }
    }
  });

  await t.test('single reads: in scope 200, outside 403 alike', async (t) => {
    for (const [v3, v4] of [[`/api/v3/secrets/raw/IN_A?${q3('prod', '/')}`, `/api/v4/secrets/IN_A?${q4('prod', '/')}`]]) {
      for (const path of [v3!, v4!, `${v3}&expandSecretReferences=true`, `${v3}&viewSecretValue=false`, `${v3}&version=1`]) {
        const r = await call('GET', path);
        t.equal(r.status, 200, path);
        clean(t, path, r);
        t.equal(r.body.secret.secretKey, 'IN_A');
      }
    }
    const r404 = await call('GET', `/api/v3/secrets/raw/NOPE?${q3('prod', '/')}`);
    isError(t, r404, 404, 'NotFound');
    clean(t, 'missing in scope', r404);
    const pairs: Array<[env: string, path: string, key: string]> = [
      ['prod', '/leakfolder', 'LEAK_SUB'],
      ['prod', '/leakfolder/leakdeep', 'LEAK_DEEP'],
      ['dev', '/', 'LEAK_DEV'],
      ['staging', '/', 'LEAK_STG'],
      ['dev', '/leakdevfolder', 'LEAK_DEVSUB'],
    ];
    for (const [env, path, key] of pairs) {
      for (const extra of ['', '&viewSecretValue=false', '&version=1', '&expandSecretReferences=true']) {
        const a = await call('GET', `/api/v3/secrets/raw/${key}?${q3(env, path, extra)}`);
        const b = await call('GET', `/api/v3/secrets/raw/NO_SUCH_KEY?${q3(env, path, extra)}`);
        isError(t, a, 403, 'PermissionDenied');
        clean(t, `${env} ${path} ${key}`, a);
        t.same({ ...a.body, reqId: 0 }, { ...b.body, reqId: 0 }, 'same refusal for a missing name');
        const a4 = await call('GET', `/api/v4/secrets/${key}?${q4(env, path, extra)}`);
        isError(t, a4, 403, 'PermissionDenied');
        clean(t, `v4 ${env} ${path} ${key}`, a4);
      }
    }
  });

  await t.test('history: in scope readable, outside "not found" like an unknown id', async (t) => {
    const r = await call('GET', `/api/v1/secret/${inA.id}/secret-versions`);
    t.equal(r.status, 200);
    clean(t, 'history in scope', r);
    t.equal(r.body.secretVersions.length, 1);
    for (const id of leakIds) {
      const a = await call('GET', `/api/v1/secret/${id}/secret-versions`);
      const unknown = randomUUID();
      const b = await call('GET', `/api/v1/secret/${unknown}/secret-versions`);
      isError(t, a, 404, 'NotFound');
      clean(t, 'history outside', a, id);
      t.equal(a.body.message.replace(id, 'ID'), b.body.message.replace(unknown, 'ID'), 'the same message as an unknown id');
    }
  });

  await t.test('by id (GET /api/v3/secrets/raw/id/:id): in scope with its value, outside "not found" like an unknown id', async (t) => {
    const r = await call('GET', `/api/v3/secrets/raw/id/${inA.id}`);
    t.equal(r.status, 200, JSON.stringify(r.body));
    clean(t, 'by id in scope', r);
    t.equal(r.body.secret.secretKey, 'IN_A');
    t.equal(r.body.secret.secretValueHidden, false, 'with its value');
    for (const id of leakIds) {
      const a = await call('GET', `/api/v3/secrets/raw/id/${id}`);
      const unknown = randomUUID();
      const b = await call('GET', `/api/v3/secrets/raw/id/${unknown}`);
      isError(t, a, 404, 'NotFound');
      clean(t, 'by id outside', a, id);
      t.equal(a.body.message.replace(id, 'ID'), b.body.message.replace(unknown, 'ID'), 'the same message as an unknown id');
    }
  });

  await t.test('folders: only what the scope may see, not even counted', async (t) => {
    const fq = (env: string, path: string) => `workspaceId=${P}&environment=${env}&path=${encodeURIComponent(path)}`;
    for (const path of [`/api/v2/folders?${fq('prod', '/')}`, `/api/v2/folders?${fq('prod', '/')}&recursive=true`, `/api/v1/folders?projectId=${P}&environment=prod&path=%2F`]) {
      const r = await call('GET', path);
      t.equal(r.status, 200, path);
      clean(t, path, r);
      t.same(r.body.folders, [], 'no folder of prod / is in scope');
    }
    for (const [env, a, b] of [['prod', '/leakfolder', '/nofolder'], ['dev', '/', '/'], ['dev', '/leakdevfolder', '/nofolder']] as const) {
      const ra = await call('GET', `/api/v2/folders?${fq(env, a)}`);
      const rb = await call('GET', `/api/v2/folders?${fq(env, b)}`);
      isError(t, ra, 403, 'PermissionDenied');
      clean(t, `folders ${env} ${a}`, ra);
      same(t, `folders ${env} ${a}`, ra, rb);
    }
  });

  await t.test('project-level reads: export, members, roles, audit', async (t) => {
    for (const [method, path] of [
      ['GET', `/api/v1/projects/${P}/export?environment=prod&secretPath=%2F&format=csv`],
      ['GET', `/api/v1/projects/${P}/export?environment=dev&secretPath=%2F&format=json`],
      ['GET', `/api/v1/projects/${P}/memberships/identities`],
      ['GET', `/api/v1/projects/${P}/memberships/users`],
      ['GET', `/api/v1/projects/${P}/memberships/identities/${scoped.identityId}`],
      ['GET', `/api/v1/projects/${P}/roles`],
      ['GET', `/api/v1/projects/${P}/roles/slug/prod-root-reader`],
      ['GET', `/api/v1/organization/audit-logs?projectId=${P}`],
      ['GET', '/api/v1/organization/audit-logs'],
      ['GET', '/api/v1/identities'],
      ['GET', '/api/v1/users'],
    ] as const) {
      const r = await call(method, path);
      t.ok(r.status === 403 || r.status === 401, `${path}: refused (${r.status})`);
      clean(t, path, r);
    }
    // The project itself (name and environments) is visible to its members, nothing of its secrets.
    for (const path of [`/api/v1/projects/${P}`, '/api/v1/projects', '/api/v1/projects/slug/scoped']) {
      const r = await call('GET', path);
      t.equal(r.status, 200, path);
      clean(t, path, r);
    }
  });

  await t.test('every write is refused and changes nothing', async (t) => {
    const before = await state();
    const w3 = (env: string, path: string) => ({ workspaceId: P, environment: env, secretPath: path });
    const w4 = (env: string, path: string) => ({ projectId: P, environment: env, secretPath: path });
    const f3 = (env: string, path: string) => ({ workspaceId: P, environment: env, path });
    const writes: Array<[Method, string, unknown?]> = [];
    for (const [env, path] of [['prod', '/'], ['prod', '/leakfolder'], ['dev', '/'], ['prod', '/nofolder']] as const) {
      writes.push(
        ['POST', '/api/v3/secrets/raw/NEW_ONE', { ...w3(env, path), secretValue: 'x' }],
        ['POST', '/api/v4/secrets/NEW_ONE', { ...w4(env, path), secretValue: 'x' }],
        ['PATCH', '/api/v3/secrets/raw/IN_A', { ...w3(env, path), secretValue: 'x' }],
        ['PATCH', '/api/v4/secrets/LEAK_SUB', { ...w4(env, path), secretValue: 'x' }],
        ['DELETE', '/api/v3/secrets/raw/IN_A', w3(env, path)],
        ['DELETE', '/api/v4/secrets/LEAK_DEV', w4(env, path)],
        ['POST', '/api/v3/secrets/batch/raw', { ...w3(env, path), secrets: [{ secretKey: 'B1', secretValue: 'x' }] }],
        ['POST', '/api/v4/secrets/batch', { ...w4(env, path), secrets: [{ secretKey: 'B1', secretValue: 'x' }] }],
        ['POST', '/api/v2/folders', { ...f3(env, path), name: 'newfolder' }],
        ['DELETE', '/api/v2/folders/leakfolder', { ...f3(env, path) }],
      );
    }
    const f = (await s.folders.list(SYSTEM, { project: { id: P }, environment: 'prod', path: '/' }))[0]!;
    writes.push(
      ['PATCH', `/api/v2/folders/${f.id}`, { ...f3('prod', '/'), name: 'renamed' }],
      ['POST', `/api/v1/secret/${inA.id}/secret-versions/1/restore`, {}],
      ['POST', `/api/v1/secret/${sub.id}/secret-versions/1/restore`, {}],
      ['POST', `/api/v1/projects/${P}/environments`, { name: 'X', slug: 'x' }],
      ['PATCH', `/api/v1/projects/${P}`, { name: 'renamed' }],
      ['DELETE', `/api/v1/projects/${P}`],
      ['POST', `/api/v1/projects/${P}/roles`, { slug: 'mine', name: 'Mine', permissions: [{ subject: 'secrets', action: ['read'] }] }],
      ['PATCH', `/api/v1/projects/${P}/roles/${role.id}`, { permissions: [{ subject: 'secrets', action: ['read'] }] }],
      ['DELETE', `/api/v1/projects/${P}/roles/${role.id}`],
      ['PATCH', `/api/v1/projects/${P}/memberships/identities/${scoped.identityId}`, { role: 'admin' }],
      ['DELETE', `/api/v1/projects/${P}/memberships/identities/${scoped.identityId}`],
    );
    for (const [method, path, body] of writes) {
      const r = await call(method, path, body);
      t.ok(r.status === 403 || r.status === 404, `${method} ${path} ${JSON.stringify(body ?? {})}: refused (${r.status})`);
      clean(t, `${method} ${path}`, r, path.includes(sub.id) ? sub.id : undefined);
    }
    t.same(await state(), before, 'nothing changed');
    // The restore of an out-of-scope version answers as an unknown id.
    const a = await call('POST', `/api/v1/secret/${sub.id}/secret-versions/1/restore`, {});
    const unknown = randomUUID();
    const b = await call('POST', `/api/v1/secret/${unknown}/secret-versions/1/restore`, {});
    t.equal(a.status, 404);
    t.equal(a.body.message.replace(sub.id, 'ID'), b.body.message.replace(unknown, 'ID'));
  });

  // Secret imports. prod / (in scope) imports staging /leakshared and dev / (both outside).
  // The role reads prod / only and a folder cannot import itself, so no import of prod /
  // has an in-scope source here (the mixed case is secretImports.test.ts's, with the same
  // compiled role). An import the caller may not read is left out everywhere: lists, single
  // reads, the import list of the folder (its id, path, environment, position count).
  const leakImportIds: string[] = [];
  await t.test('imports: an out-of-scope source is left out entirely', async (t) => {
    await folder('staging', '/', 'leakshared');
    const shared = [
      await put('staging', '/leakshared', 'LEAK_SHARED', 'leak-value-shared'),
      await put('staging', '/leakshared', 'LEAK_ONLY_IMPORTED', 'leak-value-only-imported'),
    ];
    leakIds.push(...shared.map((x) => x.id));
    const stagingShared = (await s.folders.list(SYSTEM, { project: { id: P }, environment: 'staging', path: '/' })).find((f) => f.name === 'leakshared')!;
    leakIds.push(stagingShared.id);
    for (const source of [{ environment: 'staging', path: '/leakshared' }, { environment: 'dev', path: '/' }]) {
      const imp = await s.secretImports.create(SYSTEM, { project: { id: P }, environment: 'prod', path: '/', import: source });
      leakImportIds.push(imp.id);
      leakIds.push(imp.id);
    }
    // An import inside the out-of-scope tree too (dev /leakdevfolder imports staging /leakshared).
    const deep = await s.secretImports.create(SYSTEM, { project: { id: P }, environment: 'dev', path: '/leakdevfolder', import: { environment: 'staging', path: '/leakshared' } });
    leakImportIds.push(deep.id);
    leakIds.push(deep.id);
    // The admin sees both imports of prod / (the set-up is real).
    const adminList = await api(svc, 'GET', `/api/v3/secrets/raw?${q3('prod', '/', '&include_imports=true')}`, admin.token);
    t.equal(adminList.body.imports.length, 2, 'the admin reads both imports');
    t.ok(adminList.body.imports.some((i: any) => i.secrets.some((x: any) => x.secretKey === 'LEAK_ONLY_IMPORTED')), 'the admin reads the imported key');

    for (const v of ['&include_imports=true', '&include_imports=true&recursive=true', '&include_imports=true&viewSecretValue=false', '&include_imports=true&tagSlugs=ops']) {
      for (const path of lists('prod', '/', v)) {
        const r = await call('GET', path);
        t.equal(r.status, 200, `${path}: 200`);
        clean(t, path, r);
        t.same(r.body.imports, [], `${path}: no import of an unreadable source (not even an empty one)`);
        const text = JSON.stringify(r.body);
        for (const bit of ['staging', '/leakshared', 'LEAK_SHARED', 'LEAK_ONLY_IMPORTED', 'leak-value']) t.notOk(text.includes(bit), `${path}: nothing of the import (${bit})`);
      }
    }
    // A single read falling back to imports: a key only the unreadable import holds answers
    // as an unknown key (404, same body but the name).
    for (const extra of ['&include_imports=true', '&include_imports=true&viewSecretValue=false', '&include_imports=true&expandSecretReferences=true']) {
      for (const key of ['LEAK_ONLY_IMPORTED', 'LEAK_DEV']) {
        const a = await call('GET', `/api/v3/secrets/raw/${key}?${q3('prod', '/', extra)}`);
        const b = await call('GET', `/api/v3/secrets/raw/NO_SUCH_KEY?${q3('prod', '/', extra)}`);
        isError(t, a, 404, 'NotFound');
        clean(t, `import fallback ${key}`, { ...a, body: { ...a.body, message: a.body.message.replace(key, 'KEY') } });
        t.same({ ...a.body, reqId: 0, message: a.body.message.replace(key, 'KEY') }, { ...b.body, reqId: 0, message: b.body.message.replace('NO_SUCH_KEY', 'KEY') }, `${key}: as an unknown key`);
      }
    }
    // The import list of the in-scope folder: the unreadable imports are not listed.
    const il = `/api/v1/secret-imports?workspaceId=${P}&environment=prod&path=%2F`;
    for (const path of [il, il.replace('workspaceId', 'projectId')]) {
      const r = await call('GET', path);
      t.equal(r.status, 200, path);
      clean(t, path, r);
      t.same(r.body.secretImports, [], `${path}: no import of an unreadable source`);
    }
    // The import list of an out-of-scope folder: refused as a missing folder is.
    const iq = (env: string, path: string) => `/api/v1/secret-imports?workspaceId=${P}&environment=${env}&path=${encodeURIComponent(path)}`;
    for (const [env, existing, missing] of [['staging', '/leakshared', '/nofolder'], ['dev', '/leakdevfolder', '/nofolder'], ['dev', '/', '/nofolder'], ['prod', '/leakfolder', '/nofolder']] as const) {
      const a = await call('GET', iq(env, existing));
      const b = await call('GET', iq(env, missing));
      isError(t, a, 403, 'PermissionDenied');
      clean(t, `imports of ${env} ${existing}`, a);
      same(t, `imports of ${env} ${existing}`, a, b);
    }
    // Export of prod / does not follow imports into the unreadable folders either.
    const ex = await call('GET', `/api/v1/projects/${P}/export?environment=prod&secretPath=%2F&format=json`);
    clean(t, 'export with imports', ex);
  });

  // Tags. Tag slugs and colours are project metadata (as environment names and slugs are,
  // which every member sees): listing them is not a leak, and the tag "ops" carries no
  // "leak". What a tag is attached to is: which secrets, where, and how many outside the
  // scope carry it must not show through a tagSlugs filter, an in-scope tag list or an error.
  await t.test('tags: the filter shows nothing outside the scope; tag writes are refused', async (t) => {
    const ops = await s.tags.create(SYSTEM, { project: { id: P }, slug: 'ops' });
    const other = await s.tags.create(SYSTEM, { project: { id: P }, slug: 'other' });
    leakIds.push((await s.secrets.create(SYSTEM, { project: { id: P }, environment: 'dev', secretPath: '/', key: 'LEAK_TAGGED_DEV', value: 'leak-value-tagged', tagIds: [ops.id] })).id);
    leakIds.push((await s.secrets.create(SYSTEM, { project: { id: P }, environment: 'prod', secretPath: '/leakfolder', key: 'LEAK_TAGGED_SUB', value: 'leak-value-tagged-sub', tagIds: [ops.id, other.id] })).id);
    leakIds.push((await s.secrets.create(SYSTEM, { project: { id: P }, environment: 'staging', secretPath: '/leakshared', key: 'LEAK_TAGGED_IMPORTED', value: 'leak-value-tagged-imp', tagIds: [ops.id] })).id);
    await s.secrets.create(SYSTEM, { project: { id: P }, environment: 'prod', secretPath: '/', key: 'IN_TAGGED', value: 'in-scope-tagged', tagIds: [ops.id] });
    const adminOps = await api(svc, 'GET', `/api/v3/secrets/raw?${q3('prod', '/', '&recursive=true&include_imports=true&tagSlugs=ops')}`, admin.token);
    t.same(adminOps.body.secrets.map((x: any) => x.secretKey).sort(), ['IN_TAGGED', 'LEAK_TAGGED_SUB'], 'the admin sees the out-of-scope tagged secret (the set-up is real)');
    for (const v of ['&tagSlugs=ops', '&tagSlugs=ops,other', '&tagSlugs=other', '&tagSlugs=ops&recursive=true', '&tagSlugs=ops&include_imports=true', '&tagSlugs=ops&viewSecretValue=false']) {
      for (const path of lists('prod', '/', v)) {
        const r = await call('GET', path);
        t.equal(r.status, 200, path);
        clean(t, path, r);
        const want = v.includes('ops') ? ['IN_TAGGED'] : [];
        t.same(r.body.secrets.map((x: any) => x.secretKey), want, `${path}: only the in-scope tagged secret`);
        t.same(r.body.imports ?? [], [], `${path}: no import`);
      }
    }
    // Out of scope with a tag filter: refused as without it, existing or not.
    for (const [env, existing, missing] of [['dev', '/', '/'], ['prod', '/leakfolder', '/nofolder']] as const) {
      const [e3, e4] = lists(env, existing, '&tagSlugs=ops');
      const [m3, m4] = lists(env, missing, '&tagSlugs=nope');
      for (const [a, b] of [[e3!, m3!], [e4!, m4!]] as const) {
        const ra = await call('GET', a);
        const rb = await call('GET', b);
        isError(t, ra, 403, 'PermissionDenied');
        clean(t, a, ra);
        same(t, a, ra, rb);
      }
    }
    // Tag metadata: readable by a member (not a leak, see above), nothing of what carries them.
    for (const path of [`/api/v1/projects/${P}/tags`, `/api/v1/workspace/${P}/tags`, `/api/v1/projects/${P}/tags/${ops.id}`, `/api/v1/projects/${P}/tags/slug/ops`]) {
      const r = await call('GET', path);
      t.equal(r.status, 200, path);
      clean(t, path, r);
    }
    // Writes on tags and tagging writes: refused, nothing written.
    const before = await state();
    const writes: Array<[Method, string, unknown?]> = [];
    for (const base of [`/api/v1/projects/${P}/tags`, `/api/v1/workspace/${P}/tags`]) {
      writes.push(
        ['POST', base, { slug: 'mine', color: 'red' }],
        ['PATCH', `${base}/${ops.id}`, { slug: 'renamed' }],
        ['PATCH', `${base}/${other.id}`, { color: 'blue' }],
        ['DELETE', `${base}/${ops.id}`],
        ['DELETE', `${base}/${randomUUID()}`],
      );
    }
    writes.push(
      ['PATCH', '/api/v3/secrets/raw/IN_TAGGED', { workspaceId: P, environment: 'prod', secretPath: '/', tagIds: [other.id] }],
      ['PATCH', '/api/v4/secrets/LEAK_TAGGED_DEV', { projectId: P, environment: 'dev', secretPath: '/', tagIds: [] }],
      ['POST', '/api/v3/secrets/raw/NEW_TAGGED', { workspaceId: P, environment: 'prod', secretPath: '/', secretValue: 'x', tagIds: [ops.id] }],
    );
    for (const [method, path, body] of writes) {
      const r = await call(method, path, body);
      t.ok(r.status === 403 || r.status === 404, `${method} ${path} ${JSON.stringify(body ?? {})}: refused (${r.status})`);
      clean(t, `${method} ${path}`, r);
    }
    t.same(await state(), before, 'nothing changed');
  });

  await t.test('import writes are refused and change nothing', async (t) => {
    const before = await state();
    const mine = (await s.secretImports.list(SYSTEM, { project: { id: P }, environment: 'prod', path: '/' }))[0]!;
    const writes: Array<[Method, string, unknown?]> = [];
    for (const [env, path] of [['prod', '/'], ['prod', '/leakfolder'], ['dev', '/leakdevfolder'], ['staging', '/leakshared'], ['prod', '/nofolder']] as const) {
      const w = { workspaceId: P, environment: env, path };
      writes.push(
        ['POST', '/api/v1/secret-imports', { ...w, import: { environment: 'staging', path: '/leakshared' } }],
        ['POST', '/api/v1/secret-imports', { ...w, import: { environment: 'prod', path: '/' } }],
        ['POST', '/api/v1/secret-imports', { projectId: P, environment: env, path, import: { environment: 'dev', path: '/leakdevfolder' } }],
        ['PATCH', `/api/v1/secret-imports/${mine.id}`, { ...w, import: { position: 2 } }],
        ['PATCH', `/api/v1/secret-imports/${mine.id}`, { ...w, import: { environment: 'prod', path: '/leakfolder' } }],
        ['DELETE', `/api/v1/secret-imports/${mine.id}`, w],
        ['DELETE', `/api/v1/secret-imports/${randomUUID()}`, w],
      );
      for (const id of leakImportIds) writes.push(['PATCH', `/api/v1/secret-imports/${id}`, { ...w, import: { position: 1 } }], ['DELETE', `/api/v1/secret-imports/${id}`, w]);
    }
    for (const [method, path, body] of writes) {
      const r = await call(method, path, body);
      t.ok(r.status === 403 || r.status === 404, `${method} ${path} ${JSON.stringify(body ?? {})}: refused (${r.status})`);
      const sent = leakImportIds.find((id) => path.includes(id));
      clean(t, `${method} ${path}`, r, sent);
    }
    // The refusal of a write on an unreadable import answers as on an unknown id.
    for (const id of leakImportIds) {
      const unknown = randomUUID();
      const a = await call('DELETE', `/api/v1/secret-imports/${id}`, { workspaceId: P, environment: 'prod', path: '/' });
      const b = await call('DELETE', `/api/v1/secret-imports/${unknown}`, { workspaceId: P, environment: 'prod', path: '/' });
      t.same({ status: a.status, message: a.body.message.replace(id, 'ID') }, { status: b.status, message: b.body.message.replace(unknown, 'ID') }, 'as an unknown import');
    }
    t.same(await state(), before, 'nothing changed');
  });

  // JWT and OIDC Auth configuration is the superadmin's: 403 on every route, for an
  // identity with or without a configuration (its own included), nothing written.
  await t.test('JWT/OIDC auth configuration: refused, nothing written', async (t) => {
    const issuer = await startIssuer(t);
    const configured = await machine(svc, 'configured-eso');
    const bare = await machine(svc, 'bare-eso');
    const jwtBody = { configurationType: 'static', publicKeys: [issuer.keys[0]!.spki], boundIssuer: issuer.url, boundSubject: 'leak-subject' };
    const oidcBody = { oidcDiscoveryUrl: issuer.url, boundSubject: 'leak-subject' };
    const J = (id: string) => `/api/v1/auth/jwt-auth/identities/${id}`;
    const O = (id: string) => `/api/v1/auth/oidc-auth/identities/${id}`;
    t.equal((await api(svc, 'POST', J(configured.identityId), admin.token, jwtBody)).status, 200, 'the admin attaches JWT Auth');
    const before = await state();
    for (const id of [configured.identityId, bare.identityId, scoped.identityId, randomUUID()]) {
      const routes: Array<[Method, string, unknown?]> = [
        ['POST', J(id), jwtBody],
        ['PATCH', J(id), { boundSubject: 'x' }],
        ['GET', J(id)],
        ['DELETE', J(id)],
        ['POST', O(id), oidcBody],
        ['PATCH', O(id), { boundSubject: 'x' }],
        ['GET', O(id)],
        ['DELETE', O(id)],
      ];
      for (const [method, path, body] of routes) {
        const r = await call(method, path, body);
        isError(t, r, 403, 'PermissionDenied');
        clean(t, `${method} ${path}`, r, id);
        const unknownId = randomUUID();
        same(t, `${method} ${path}`, { ...r, body: { ...r.body, message: r.body.message.replace(id, 'ID') } }, await (async () => {
          const u = await call(method, path.replace(id, unknownId), body);
          return { ...u, body: { ...u.body, message: u.body.message.replace(unknownId, 'ID') } };
        })());
      }
    }
    t.same(await state(), before, 'nothing changed');
    t.equal(issuer.hits.discovery + issuer.hits.jwks, 0, 'no refused request fetched anything from the issuer');
  });

  await t.test('a reference into a scope the caller cannot read is refused, existing or not', async (t) => {
    await put('prod', '/', 'REF_OUT', '${dev.LEAK_DEV}');
    await put('prod', '/', 'REF_MISSING', '${dev.NO_SUCH_KEY}');
    await put('prod', '/', 'REF_SUB', '${prod.leakfolder.LEAK_SUB}');
    // Into a folder prod / imports (an import gives no right to reference its source).
    await put('prod', '/', 'REF_IMPORTED', '${staging.leakshared.LEAK_SHARED}');
    await put('prod', '/', 'REF_IMPORTED_DEV', '${dev.LEAK_DEV}-${IN_A}');
    for (const key of ['REF_OUT', 'REF_MISSING', 'REF_SUB', 'REF_IMPORTED', 'REF_IMPORTED_DEV']) {
      const raw = await call('GET', `/api/v3/secrets/raw/${key}?${q3('prod', '/')}`);
      t.equal(raw.status, 200, 'unexpanded, the value is the caller\'s own');
      const r = await call('GET', `/api/v3/secrets/raw/${key}?${q3('prod', '/', '&expandSecretReferences=true')}`);
      isError(t, r, 403, 'PermissionDenied', /reference/);
      clean(t, `expand ${key}`, r);
      t.notMatch(r.body.message, /dev|leakfolder|leakshared|staging/, 'the refusal does not repeat the reference (part of a value)');
    }
    const a = await call('GET', `/api/v3/secrets/raw/REF_OUT?${q3('prod', '/', '&expandSecretReferences=true')}`);
    const b = await call('GET', `/api/v3/secrets/raw/REF_MISSING?${q3('prod', '/', '&expandSecretReferences=true')}`);
    same(t, 'reference to an existing and a missing secret', a, b);
    for (const path of [...lists('prod', '/', '&expandSecretReferences=true'), ...lists('prod', '/', '&expandSecretReferences=true&include_imports=true')]) {
      const r = await call('GET', path);
      isError(t, r, 403, 'PermissionDenied');
      clean(t, path, r);
    }
    // The admin (unrestricted) expands it.
    const r = await api(svc, 'GET', `/api/v3/secrets/raw/REF_OUT?${q3('prod', '/', '&expandSecretReferences=true')}`, admin.token);
    t.equal(r.body.secret.secretValue, 'leak-value-dev');
  });

  t.comment(`scoped-role leak matrix: ${driven} requests driven as the scoped identity, ${cases} answers checked for leaks`);
  t.ok(cases >= 300, `the matrix checked ${cases} answers`);

  async function state() {
    const [row] = await s.store.sql<Record<string, unknown>[]>`select
      (select md5(coalesce(string_agg(id::text || key || version, ',' order by id), '')) from secrets) as secrets,
      (select count(*)::int from secret_versions) as versions,
      (select md5(coalesce(string_agg(id::text || path, ',' order by id), '')) from folders) as folders,
      (select md5(coalesce(string_agg(id::text || slug || version, ',' order by id), '')) from project_roles) as roles,
      (select count(*)::int from environments) as environments,
      (select md5(coalesce(string_agg(t::text, ',' order by t::text), '')) from secret_imports t) as imports,
      (select md5(coalesce(string_agg(t::text, ',' order by t::text), '')) from secret_tags t) as tags,
      (select md5(coalesce(string_agg(t::text, ',' order by t::text), '')) from secret_tag_links t) as tag_links,
      (select md5(coalesce(string_agg(t::text, ',' order by t::text), '')) from identity_jwt_auths t) as jwt_auths,
      (select name from projects where id = ${P}) as project`;
    return { ...(await snapshot(svc)), ...row };
  }
});

t.test('a role scoped to prod /app/** (deny /app/locked/**) writes only there', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const s = svc.services;
  const P = (await s.projects.create(SYSTEM, { name: 'apps' })).id;
  for (const [parent, name] of [['/', 'app'], ['/app', 'locked'], ['/', 'other']] as const) {
    await s.folders.create(SYSTEM, { project: { id: P }, environment: 'prod', parentPath: parent, name });
    await s.folders.create(SYSTEM, { project: { id: P }, environment: 'dev', parentPath: parent, name });
  }
  await s.secrets.create(SYSTEM, { project: { id: P }, environment: 'prod', secretPath: '/app/locked', key: 'LOCKED', value: 'v' });
  const role = await s.roles.create(SYSTEM, { id: P }, {
    slug: 'app-writer',
    name: 'App writer',
    permissions: [
      { subject: 'secrets', action: ['read', 'create', 'edit', 'delete'], conditions: { environment: 'prod', secretPath: { $glob: '/app/**' } } },
      { subject: 'secrets', action: ['delete', 'edit'], conditions: { secretPath: { $glob: '/app/locked/**' } }, inverted: true },
    ],
  });
  const m = await machine(svc, 'app-writer');
  await s.memberships.add(SYSTEM, { project: { id: P }, member: { kind: 'identity', id: m.identityId }, role: role.slug });
  const call = (method: Method, path: string, json?: unknown) => api(svc, method, path, m.token, json);
  const w = (env: string, path: string) => ({ workspaceId: P, environment: env, secretPath: path });
  const f = (env: string, path: string) => ({ workspaceId: P, environment: env, path });

  const steps: Array<[string, Method, string, unknown, number]> = [
    ['create in /app', 'POST', '/api/v3/secrets/raw/A1', { ...w('prod', '/app'), secretValue: '1' }, 200],
    ['create in /app/locked (create not denied)', 'POST', '/api/v3/secrets/raw/L2', { ...w('prod', '/app/locked'), secretValue: '1' }, 200],
    ['create in /', 'POST', '/api/v3/secrets/raw/R1', { ...w('prod', '/'), secretValue: '1' }, 403],
    ['create in /other', 'POST', '/api/v3/secrets/raw/O1', { ...w('prod', '/other'), secretValue: '1' }, 403],
    ['create in dev /app', 'POST', '/api/v3/secrets/raw/D1', { ...w('dev', '/app'), secretValue: '1' }, 403],
    ['batch in /app', 'POST', '/api/v3/secrets/batch/raw', { ...w('prod', '/app'), secrets: [{ secretKey: 'B1', secretValue: '1' }] }, 200],
    ['edit in /app', 'PATCH', '/api/v3/secrets/raw/A1', { ...w('prod', '/app'), secretValue: '2' }, 200],
    ['edit in /app/locked', 'PATCH', '/api/v3/secrets/raw/LOCKED', { ...w('prod', '/app/locked'), secretValue: '2' }, 403],
    ['delete in /app/locked', 'DELETE', '/api/v3/secrets/raw/LOCKED', w('prod', '/app/locked'), 403],
    ['delete in /app', 'DELETE', '/api/v3/secrets/raw/A1', w('prod', '/app'), 200],
    ['folder in /app', 'POST', '/api/v2/folders', { ...f('prod', '/app'), name: 'new' }, 200],
    ['folder in /', 'POST', '/api/v2/folders', { ...f('prod', '/'), name: 'new' }, 403],
    ['delete /app/locked (a denied subtree)', 'DELETE', '/api/v2/folders/locked', { ...f('prod', '/app'), force: true }, 403],
    ['delete /app/new', 'DELETE', '/api/v2/folders/new', f('prod', '/app'), 200],
  ];
  for (const [what, method, path, body, status] of steps) {
    const r = await call(method, path, body);
    t.equal(r.status, status, `${what}: ${status}${r.status !== status ? ` ${JSON.stringify(r.body)}` : ''}`);
  }
  const list = await call('GET', `/api/v3/secrets/raw?workspaceId=${P}&environment=prod&secretPath=%2Fapp&recursive=true`);
  t.same(list.body.secrets.map((x: any) => x.secretKey).sort(), ['B1', 'L2', 'LOCKED'], 'recursive list of /app: /app and /app/locked');
  t.equal((await call('GET', `/api/v3/secrets/raw?workspaceId=${P}&environment=prod&secretPath=%2F&recursive=true`)).status, 403, 'a recursive list from / is outside the scope');
});
