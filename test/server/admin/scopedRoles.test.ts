// The scoped-role leak matrix: an identity whose custom role reads `prod` `/` only drives
// EVERY route of the API (reads and writes), and nothing outside its scope leaks: no
// value, no name (secret, folder), no id, no count (list lengths, folder lists, history),
// and refusals of things outside the scope answer the same whether they exist or not.
// Writes are refused and change nothing. A second role (read/write under /app/**, with
// a deny on /app/locked/**) checks create/edit/delete per environment and path.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { SYSTEM } from '../../../server/domain/access.js';
import type { JsonResponse } from '../../helpers/http.js';
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
  const call = (method: Method, path: string, json?: unknown) => api(svc, method, path, T, json);
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
        else t.equal(ref.secretValue, v.includes('expand') ? 'in-scope-a-suffix' : '${IN_A}-suffix', 'a reference inside the scope expands');
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

  await t.test('a reference into a scope the caller cannot read is refused, existing or not', async (t) => {
    await put('prod', '/', 'REF_OUT', '${dev.LEAK_DEV}');
    await put('prod', '/', 'REF_MISSING', '${dev.NO_SUCH_KEY}');
    await put('prod', '/', 'REF_SUB', '${prod.leakfolder.LEAK_SUB}');
    for (const key of ['REF_OUT', 'REF_MISSING', 'REF_SUB']) {
      const raw = await call('GET', `/api/v3/secrets/raw/${key}?${q3('prod', '/')}`);
      t.equal(raw.status, 200, 'unexpanded, the value is the caller\'s own');
      const r = await call('GET', `/api/v3/secrets/raw/${key}?${q3('prod', '/', '&expandSecretReferences=true')}`);
      isError(t, r, 403, 'PermissionDenied', /reference/);
      clean(t, `expand ${key}`, r);
      t.notMatch(r.body.message, /dev|leakfolder/, 'the refusal does not repeat the reference (part of a value)');
    }
    const a = await call('GET', `/api/v3/secrets/raw/REF_OUT?${q3('prod', '/', '&expandSecretReferences=true')}`);
    const b = await call('GET', `/api/v3/secrets/raw/REF_MISSING?${q3('prod', '/', '&expandSecretReferences=true')}`);
    same(t, 'reference to an existing and a missing secret', a, b);
    for (const path of lists('prod', '/', '&expandSecretReferences=true')) {
      const r = await call('GET', path);
      isError(t, r, 403, 'PermissionDenied');
      clean(t, path, r);
    }
    // The admin (unrestricted) expands it.
    const r = await api(svc, 'GET', `/api/v3/secrets/raw/REF_OUT?${q3('prod', '/', '&expandSecretReferences=true')}`, admin.token);
    t.equal(r.body.secret.secretValue, 'leak-value-dev');
  });

  t.comment(`scoped-role leak matrix: ${cases} requests checked for leaks`);
  t.ok(cases >= 150, `the matrix drove ${cases} requests`);

  async function state() {
    const [row] = await s.store.sql<Record<string, unknown>[]>`select
      (select md5(coalesce(string_agg(id::text || key || version, ',' order by id), '')) from secrets) as secrets,
      (select count(*)::int from secret_versions) as versions,
      (select md5(coalesce(string_agg(id::text || path, ',' order by id), '')) from folders) as folders,
      (select md5(coalesce(string_agg(id::text || slug || version, ',' order by id), '')) from project_roles) as roles,
      (select count(*)::int from environments) as environments,
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
