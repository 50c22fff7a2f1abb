// Folders over HTTP: members (and admins) create, rename and delete folders, viewers
// list them; a rename moves the whole subtree (secrets stay readable, old paths answer
// 404 at once, on every replica); a delete that would take secrets with it needs
// force=true (and overrideImmutable=true for keys that must never change) and audits
// every secret it removes; a folder name is one path segment and a path never climbs
// out of the environment; bad input changes nothing.
import t, { type Test } from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { request } from '../../helpers/http.js';
import { BACKENDS, startTestService, testEnv, type TestService } from '../../helpers/service.js';
import { api, isError, machine, plainUser, snapshot, superadmin, type Method } from './helpers.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MISSING = '5d1f7c4e-0000-4000-8000-000000000000';
const FOLDERS = '/api/v2/folders';

/** The admin helpers' row counts, plus folders (by path) and secrets. */
async function rows(svc: TestService) {
  const sql = svc.services.store.sql;
  const [row] = await sql<Record<string, unknown>[]>`select
    (select count(*)::int from projects) as projects,
    (select count(*)::int from environments) as environments,
    (select count(*)::int from folders) as folders,
    (select string_agg(path, ',' order by path, id) from folders) as folder_paths,
    (select count(*)::int from secrets) as secrets,
    (select count(*)::int from secret_versions) as secret_versions`;
  return { ...(await snapshot(svc)), ...row };
}

const qs = (q: Record<string, string>) => new URLSearchParams(q).toString();

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** A folder answer without its timestamps, once each folder in it is checked to carry both as ISO strings (the Python SDK's models require them). */
function unstamped(t: Test, body: any): any {
  const strip = (f: any) => {
    t.match(f.createdAt, ISO, 'createdAt');
    t.match(f.updatedAt, ISO, 'updatedAt');
    const { createdAt: _c, updatedAt: _u, ...rest } = f;
    return rest;
  };
  if (body?.folder) return { ...body, folder: strip(body.folder) };
  if (Array.isArray(body?.folders)) return { ...body, folders: body.folders.map(strip) };
  return strip(body);
}

for (const backend of BACKENDS) {
  t.test(`folders (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend));
    const admin = await superadmin(svc);
    const as = admin.token;
    const P = (await svc.services.projects.create(SYSTEM, { name: 'folders' })).id;
    const Q = (await svc.services.projects.create(SYSTEM, { name: 'folders-other' })).id;
    const sql = svc.services.store.sql;
    const rootOf = async (projectId: string, environment: string) =>
      (await sql<{ id: string; environmentId: string }[]>`select f.id, f.environment_id from folders f join environments e on e.id = f.environment_id
        where e.project_id = ${projectId} and e.slug = ${environment} and f.path = '/'`)[0]!;
    const list = (q: Record<string, string>, token = as) => api(svc, 'GET', `${FOLDERS}?${qs(q)}`, token);
    /** ESO's list read of a folder, by project id. */
    const read = (token: string, environment: string, secretPath: string) =>
      request(`${svc.url}/api/v3/secrets/raw?${qs({ workspaceId: P, environment, secretPath })}`, { token });
    const secret = (environment: string, secretPath: string, key: string, projectId = P) =>
      svc.services.secrets.create(SYSTEM, { project: { id: projectId }, environment, secretPath, key, value: `value of ${key}` });
    const folder = (name: string, path = '/', environment = 'dev', projectId = P) =>
      svc.services.folders.create(SYSTEM, { project: { id: projectId }, environment, parentPath: path, name });
    /** Every folder whose path is not its parent's path plus its name (none, ever). */
    const inconsistentPaths = async () =>
      sql`select c.path from folders c join folders p on p.id = c.parent_id
        where c.path <> case when p.path = '/' then '/' || c.name else p.path || '/' || c.name end`;
    const deleteSecretEvents = (secretPathPrefix: string) =>
      sql<{ environment: string; secretPath: string; secretKey: string; secretVersion: number; metadata: any }[]>`
        select environment, secret_path, secret_key, secret_version, metadata from audit_log
        where project_id = ${P} and event_type = 'delete-secret' and starts_with(secret_path, ${secretPathPrefix}) order by id`;

    t.test('create, list and delete folders: exact shapes', async (t) => {
      const root = await rootOf(P, 'dev');
      const r = await api(svc, 'POST', FOLDERS, as, { projectId: P, environment: 'dev', name: 'app', path: '/' });
      t.equal(r.status, 200, JSON.stringify(r.body));
      const app = r.body.folder;
      t.same(unstamped(t, r.body), { folder: { id: app.id, name: 'app', path: '/app', parentId: root.id, envId: root.environmentId } });
      t.match(app.id, UUID);
      const db = await api(svc, 'POST', FOLDERS, as, { projectId: P, environment: 'dev', name: 'db', path: '/app' });
      t.same(unstamped(t, db.body), { folder: { id: db.body.folder.id, name: 'db', path: '/app/db', parentId: app.id, envId: root.environmentId } });
      const noPath = await api(svc, 'POST', FOLDERS, as, { workspaceId: P, environment: 'dev', name: 'cache' });
      t.equal(noPath.body.folder?.path, '/cache', 'the path defaults to /, and workspaceId names the project too');
      const older = await api(svc, 'POST', FOLDERS, as, { projectId: P, environment: 'dev', name: 'web', directory: '/app/' });
      t.equal(older.body.folder?.path, '/app/web', 'the older "directory" with a trailing slash');

      const top = await list({ projectId: P, environment: 'dev', path: '/' });
      t.equal(top.status, 200);
      t.same(unstamped(t, top.body), {
        folders: [
          { id: app.id, name: 'app', path: '/app', parentId: root.id, envId: root.environmentId },
          { id: noPath.body.folder.id, name: 'cache', path: '/cache', parentId: root.id, envId: root.environmentId },
        ],
      }, 'the direct sub-folders, by name, in exactly this shape');
      t.same((await list({ projectId: P, environment: 'dev' })).body, top.body, 'the path defaults to /');
      t.same((await list({ projectId: P, environment: 'dev', path: '/app/' })).body.folders.map((f: any) => f.path), ['/app/db', '/app/web']);
      t.same((await list({ workspaceId: P, environment: 'dev', directory: '/app/db' })).body, { folders: [] });
      t.same((await list({ projectId: P, environment: 'prod' })).body, { folders: [] }, 'environments do not share folders');

      isError(t, await api(svc, 'POST', FOLDERS, as, { projectId: P, environment: 'dev', name: 'app', path: '/' }), 400, 'BadRequest', "Folder '/app' already exists");
      t.equal((await api(svc, 'POST', FOLDERS, as, { projectId: P, environment: 'prod', name: 'app' })).status, 200, 'the same name in another environment');

      await secret('dev', '/app/db', 'DB_PASSWORD');
      const reader = await machine(svc, 'folder-reader', [[P, 'viewer']]);
      t.same((await read(reader.token, 'dev', '/app/db')).body.secrets.map((s: any) => [s.secretKey, s.secretPath]), [['DB_PASSWORD', '/app/db']]);

      const byName = await api(svc, 'DELETE', `${FOLDERS}/cache`, as, { projectId: P, environment: 'dev', path: '/' });
      t.equal(byName.status, 200, JSON.stringify(byName.body));
      t.same(unstamped(t, byName.body), { folder: { id: noPath.body.folder.id, name: 'cache', path: '/cache', parentId: root.id, envId: root.environmentId } });
      const byId = await api(svc, 'DELETE', `${FOLDERS}/${older.body.folder.id.toUpperCase()}?${qs({ projectId: P, environment: 'dev', path: '/app' })}`, as);
      t.equal(byId.status, 200, 'by id, scope in the query, ids case-insensitive');
      t.equal(byId.body.folder?.path, '/app/web');
      t.same((await list({ projectId: P, environment: 'dev', path: '/app' })).body.folders.map((f: any) => f.name), ['db']);
      isError(t, await list({ projectId: P, environment: 'dev', path: '/cache' }), 404, 'SecretPathNotFound', "Folder with path '/cache' in environment 'dev' not found");

      const events = await sql<{ eventType: string; actorId: string; environment: string; secretPath: string }[]>`select event_type, actor_id, environment, secret_path
        from audit_log where project_id = ${P} and event_type like '%-folder' order by id`;
      t.same(events.map((e) => [e.eventType, e.environment, e.secretPath]), [
        ['create-folder', 'dev', '/app'],
        ['create-folder', 'dev', '/app/db'],
        ['create-folder', 'dev', '/cache'],
        ['create-folder', 'dev', '/app/web'],
        ['create-folder', 'prod', '/app'],
        ['delete-folder', 'dev', '/cache'],
        ['delete-folder', 'dev', '/app/web'],
      ], 'every change is audited');
      t.ok(events.every((e) => e.actorId === admin.userId), 'as the superadmin');
    });

    t.test('delete a folder: refused while its subtree holds secrets, everything below goes with force', async (t) => {
      await folder('svc', '/', 'staging');
      await folder('inner', '/svc', 'staging');
      await folder('deeper', '/svc/inner', 'staging');
      await secret('staging', '/svc/inner', 'INNER');
      await secret('staging', '/svc/inner/deeper', 'DEEPER');
      await secret('staging', '/', 'ROOT_STAYS');
      const reader = await machine(svc, 'subtree-reader', [[P, 'viewer']]);
      t.equal((await read(reader.token, 'staging', '/svc/inner')).status, 200, 'read (and cached)');

      const before = await rows(svc);
      const scope = { projectId: P, environment: 'staging', path: '/' };
      const refused = await api(svc, 'DELETE', `${FOLDERS}/svc`, as, scope);
      isError(t, refused, 409, 'Conflict', "Folder '/svc' holds 2 secrets; pass force=true to delete it with them");
      t.same(refused.body.details, { requires: 'force' }, 'details say what a repeat needs');
      isError(t, await api(svc, 'DELETE', `${FOLDERS}/svc`, as, { ...scope, force: false }), 409, 'Conflict');
      isError(t, await api(svc, 'DELETE', `${FOLDERS}/svc?force=false`, as, scope), 409, 'Conflict');
      isError(t, await api(svc, 'DELETE', `${FOLDERS}/inner`, as, { ...scope, path: '/svc' }), 409, 'Conflict', /holds 2 secrets/);
      t.same(await rows(svc), before, 'nothing deleted');

      // Body fields win over the query.
      const bodyWins = await api(svc, 'DELETE', `${FOLDERS}/deeper?force=true`, as, { ...scope, path: '/svc/inner', force: false });
      isError(t, bodyWins, 409, 'Conflict', "Folder '/svc/inner/deeper' holds 1 secret; pass force=true to delete it with them");

      const r = await api(svc, 'DELETE', `${FOLDERS}/svc`, as, { ...scope, force: true });
      t.equal(r.status, 200, JSON.stringify(r.body));
      t.equal(r.body.folder?.path, '/svc');
      const after = await rows(svc);
      t.equal(after.folders, (before.folders as number) - 3, 'the folder and its two sub-folders');
      t.equal(after.secrets, (before.secrets as number) - 2, 'and their secrets');
      isError(t, await read(reader.token, 'staging', '/svc/inner'), 404);
      t.same((await read(reader.token, 'staging', '/')).body.secrets.map((s: any) => s.secretKey), ['ROOT_STAYS'], 'nothing outside the subtree');
      const [audit] = await sql`select metadata from audit_log where project_id = ${P} and event_type = 'delete-folder' and secret_path = '/svc'`;
      t.same(audit?.metadata, { folderId: r.body.folder.id, secretsDeleted: 2 });
      t.same((await deleteSecretEvents('/svc')).map((e) => [e.environment, e.secretPath, e.secretKey, e.secretVersion, e.metadata]), [
        ['staging', '/svc/inner', 'INNER', 1, { cascade: 'delete-folder' }],
        ['staging', '/svc/inner/deeper', 'DEEPER', 1, { cascade: 'delete-folder' }],
      ], 'one delete-secret entry per secret removed: name, path, environment, version');

      await folder('quoted', '/', 'staging');
      await secret('staging', '/quoted', 'Q');
      const forced = await api(svc, 'DELETE', `${FOLDERS}/quoted?${qs({ ...scope, force: 'true' })}`, as);
      t.equal(forced.status, 200, 'force=true in the query');
      // A folder whose name is a prefix of another's: deleting /a leaves /ab alone.
      await folder('a', '/', 'staging');
      await folder('ab', '/', 'staging');
      await secret('staging', '/ab', 'AB');
      t.equal((await api(svc, 'DELETE', `${FOLDERS}/a`, as, scope)).status, 200, '/a is empty: no force needed');
      t.same((await read(reader.token, 'staging', '/ab')).body.secrets.map((s: any) => s.secretKey), ['AB']);
    });

    t.test('a forced delete of keys that must never change also needs overrideImmutable=true', async (t) => {
      await folder('pinned', '/', 'staging');
      await folder('inside', '/pinned', 'staging');
      await secret('staging', '/pinned', 'PLAIN');
      await svc.services.secrets.create(SYSTEM, { project: { id: P }, environment: 'staging', secretPath: '/pinned/inside', key: 'SIGNING_KEY', value: 'never changes', immutable: true });
      await svc.services.secrets.update(SYSTEM, { project: { id: P }, environment: 'staging', secretPath: '/pinned/inside', key: 'SIGNING_KEY', comment: 'v2' });
      const scope = { projectId: P, environment: 'staging', path: '/' };
      const before = await rows(svc);
      isError(t, await api(svc, 'DELETE', `${FOLDERS}/pinned`, as, scope), 409, 'Conflict', /holds 2 secrets; pass force=true/);
      for (const extra of [{}, { overrideImmutable: false }]) {
        const r = await api(svc, 'DELETE', `${FOLDERS}/pinned`, as, { ...scope, force: true, ...extra });
        isError(t, r, 409, 'Conflict', "Folder '/pinned' holds 1 secret marked as never changing; pass overrideImmutable=true as well to delete it");
        t.same(r.body.details, { requires: 'overrideImmutable' }, 'details say what a repeat needs');
        t.notMatch(r.body.message, /SIGNING_KEY|never changes/, 'a count, neither names nor values');
      }
      isError(t, await api(svc, 'DELETE', `${FOLDERS}/pinned`, as, { ...scope, overrideImmutable: true }), 409, 'Conflict', /pass force=true/);
      isError(t, await api(svc, 'DELETE', `${FOLDERS}/pinned`, as, { ...scope, force: true, overrideImmutable: 'maybe' }), 422, 'ValidationFailure');
      t.same(await rows(svc), before, 'nothing deleted');

      const r = await api(svc, 'DELETE', `${FOLDERS}/pinned?${qs({ ...scope, force: 'true', overrideImmutable: 'true' })}`, as);
      t.equal(r.status, 200, JSON.stringify(r.body));
      t.equal((await rows(svc)).secrets, (before.secrets as number) - 2);
      t.same((await deleteSecretEvents('/pinned')).map((e) => [e.secretPath, e.secretKey, e.secretVersion, e.metadata]), [
        ['/pinned', 'PLAIN', 1, { cascade: 'delete-folder' }],
        ['/pinned/inside', 'SIGNING_KEY', 2, { cascade: 'delete-folder', immutableOverride: true }],
      ], 'the override is on record for the protected key');
      const [trail] = await sql`select string_agg(metadata::text || coalesce(secret_key, ''), ' ') as entries from audit_log where project_id = ${P}`;
      t.notOk(trail!.entries.includes('never changes'), 'no value in the audit trail');
    });

    t.test('rename a folder: the subtree moves, sealed values still open, old paths are gone at once', async (t) => {
      const root = await rootOf(P, 'dev');
      const svcFolder = await folder('svc', '/');
      const inner = await folder('inner', '/svc');
      const deep = await folder('deep', '/svc/inner');
      const lookalike = await folder('svcx', '/');
      await secret('dev', '/svc', 'TOP');
      await secret('dev', '/svc/inner/deep', 'DEEP');
      await secret('dev', '/svcx', 'LOOKALIKE');
      const reader = await machine(svc, 'rename-reader', [[P, 'viewer']]);
      // Warm the caches of the old paths: reads, folder lists, a recursive read.
      t.same((await read(reader.token, 'dev', '/svc/inner/deep')).body.secrets.map((s: any) => s.secretKey), ['DEEP']);
      t.equal((await list({ projectId: P, environment: 'dev', path: '/svc' }, reader.token)).status, 200);
      const recursiveBefore = await request(`${svc.url}/api/v3/secrets/raw?${qs({ workspaceId: P, environment: 'dev', secretPath: '/svc', recursive: 'true' })}`, { token: reader.token });
      t.same(recursiveBefore.body.secrets.map((s: any) => s.secretPath).sort(), ['/svc', '/svc/inner/deep']);
      const blobs = async () => sql`select s.id, s.folder_id, md5(s.value_blob) as value, s.version from secrets s order by s.id`;
      const sealedBefore = await blobs();
      const auditBefore = (await rows(svc)).audit as number;

      const r = await api(svc, 'PATCH', `${FOLDERS}/${svcFolder.id}`, as, { projectId: P, environment: 'dev', path: '/', name: 'api' });
      t.equal(r.status, 200, JSON.stringify(r.body));
      t.same(unstamped(t, r.body), { folder: { id: svcFolder.id, name: 'api', path: '/api', parentId: root.id, envId: root.environmentId } }, 'the create route\'s shape');

      t.same(await blobs(), sealedBefore, 'no secret row rewritten: values are bound to folder ids, not paths');
      const opened = await read(reader.token, 'dev', '/api/inner/deep');
      t.same(opened.body.secrets.map((s: any) => [s.secretKey, s.secretValue, s.secretPath]), [['DEEP', 'value of DEEP', '/api/inner/deep']], 'a secret below the renamed folder opens');
      t.same((await read(reader.token, 'dev', '/api')).body.secrets.map((s: any) => [s.secretKey, s.secretValue]), [['TOP', 'value of TOP']]);
      const recursive = await request(`${svc.url}/api/v3/secrets/raw?${qs({ workspaceId: P, environment: 'dev', secretPath: '/api', recursive: 'true' })}`, { token: reader.token });
      t.same(recursive.body.secrets.map((s: any) => s.secretPath).sort(), ['/api', '/api/inner/deep']);
      for (const old of ['/svc', '/svc/inner', '/svc/inner/deep']) {
        isError(t, await read(reader.token, 'dev', old), 404, 'SecretPathNotFound', `Folder with path '${old}' in environment 'dev' not found`);
        isError(t, await list({ projectId: P, environment: 'dev', path: old }, reader.token), 404, 'SecretPathNotFound');
      }
      t.same(unstamped(t, (await list({ projectId: P, environment: 'dev', path: '/api' }, reader.token)).body), {
        folders: [{ id: inner.id, name: 'inner', path: '/api/inner', parentId: svcFolder.id, envId: root.environmentId }],
      });
      t.same((await list({ projectId: P, environment: 'dev', path: '/api/inner' }, reader.token)).body.folders.map((f: any) => [f.id, f.path]), [[deep.id, '/api/inner/deep']]);
      t.same((await read(reader.token, 'dev', '/svcx')).body.secrets.map((s: any) => s.secretKey), ['LOOKALIKE'], 'a folder whose name merely starts the same stays');
      t.same((await sql`select path from folders where id = ${lookalike.id}`)[0]?.path, '/svcx');
      t.same(await inconsistentPaths(), []);

      const [audit] = await sql`select actor_id, environment, secret_path, metadata from audit_log where project_id = ${P} and event_type = 'update-folder' order by id`;
      t.same(audit, {
        actorId: admin.userId, environment: 'dev', secretPath: '/api',
        metadata: { folderId: svcFolder.id, oldPath: '/svc', newPath: '/api', foldersMoved: 3 },
      }, 'audited with the old and the new path');
      t.equal((await rows(svc)).audit, auditBefore + 1, 'one entry');

      // An older client names the folder (not its id); `directory` is the older `path`.
      const byName = await api(svc, 'PATCH', `${FOLDERS}/inner`, as, { workspaceId: P, environment: 'dev', directory: '/api/', name: 'core' });
      t.equal(byName.status, 200, JSON.stringify(byName.body));
      t.same(unstamped(t, byName.body.folder), { id: inner.id, name: 'core', path: '/api/core', parentId: svcFolder.id, envId: root.environmentId });
      t.same((await read(reader.token, 'dev', '/api/core/deep')).body.secrets.map((s: any) => s.secretValue), ['value of DEEP']);

      const n = (await rows(svc)).audit;
      const same = await api(svc, 'PATCH', `${FOLDERS}/${inner.id.toUpperCase()}`, as, { projectId: P, environment: 'dev', path: '/api', name: 'core' });
      t.same(same.body.folder?.path, '/api/core', 'the same name: a no-op');
      t.equal((await rows(svc)).audit, n, 'not audited');

      // Writes and history follow the new paths.
      const written = await request(`${svc.url}/api/v3/secrets/raw/AFTER`, { method: 'POST', token: as, json: { workspaceId: P, environment: 'dev', secretPath: '/api/core/deep', secretValue: 'after' } });
      t.equal(written.status, 200, JSON.stringify(written.body));
      const updated = await request(`${svc.url}/api/v3/secrets/raw/DEEP`, { method: 'PATCH', token: as, json: { workspaceId: P, environment: 'dev', secretPath: '/api/core/deep', secretValue: 'v2' } });
      t.equal(updated.body.secret?.version, 2);
      const history = await api(svc, 'GET', `/api/v1/secret/${updated.body.secret.id}/secret-versions`, as);
      t.same(history.body.secretVersions.map((v: any) => v.secretValue), ['v2', 'value of DEEP'], 'versions sealed before the rename open too');
      isError(t, await request(`${svc.url}/api/v3/secrets/raw/STALE`, { method: 'POST', token: as, json: { workspaceId: P, environment: 'dev', secretPath: '/svc/inner/deep', secretValue: 'x' } }), 404);
    });

    if (backend === 'postgres+redis') {
      t.test('a rename on one replica: the next read on another sees the new paths', async (t) => {
        const B = await startTestService(t, svc.env);
        await folder('replicated', '/', 'prod');
        await secret('prod', '/replicated', 'ON_B');
        const reader = await machine(svc, 'rename-replica-reader', [[P, 'viewer']]);
        const readOn = (s: TestService, secretPath: string) =>
          request(`${s.url}/api/v3/secrets/raw?${qs({ workspaceId: P, environment: 'prod', secretPath })}`, { token: reader.token });
        t.same((await readOn(B, '/replicated')).body.secrets.map((s: any) => s.secretKey), ['ON_B'], 'B reads (and caches) the old path');
        // And caches the new path as missing.
        isError(t, await readOn(B, '/moved'), 404, 'SecretPathNotFound');
        const r = await api(svc, 'PATCH', `${FOLDERS}/replicated`, as, { projectId: P, environment: 'prod', path: '/', name: 'moved' });
        t.equal(r.status, 200, JSON.stringify(r.body));
        isError(t, await readOn(B, '/replicated'), 404, 'SecretPathNotFound');
        t.same((await readOn(B, '/moved')).body.secrets.map((s: any) => [s.secretKey, s.secretValue, s.secretPath]), [['ON_B', 'value of ON_B', '/moved']]);
        const listed = (await api(B, 'GET', `${FOLDERS}?${qs({ projectId: P, environment: 'prod' })}`, reader.token)).body.folders.map((f: any) => f.path);
        t.ok(listed.includes('/moved') && !listed.includes('/replicated'), `B lists the new name only: ${listed}`);
      });
    }

    t.test('racing renames, creates and secret writes in one subtree: paths stay consistent, no 500', async (t) => {
      await folder('busy', '/', 'staging');
      await folder('sub', '/busy', 'staging');
      const scope = { projectId: P, environment: 'staging' };
      const results = await Promise.all([
        api(svc, 'PATCH', `${FOLDERS}/busy`, as, { ...scope, path: '/', name: 'renamed' }),
        api(svc, 'PATCH', `${FOLDERS}/busy`, as, { ...scope, path: '/', name: 'other' }),
        ...[1, 2, 3].map((i) => api(svc, 'POST', FOLDERS, as, { ...scope, path: '/busy/sub', name: `child${i}` })),
        ...[1, 2, 3].map((i) => request(`${svc.url}/api/v3/secrets/raw/RACE_${i}`, { method: 'POST', token: as, json: { workspaceId: P, environment: 'staging', secretPath: '/busy/sub', secretValue: `v${i}` } })),
      ]);
      for (const r of results) t.ok([200, 404].includes(r.status), `200 or 404: ${r.status} ${JSON.stringify(r.body)}`);
      const renames = results.slice(0, 2);
      t.same(renames.map((r) => r.status).sort(), [200, 404], 'one rename wins; the other finds no /busy');
      t.same(await inconsistentPaths(), [], 'every folder path is its parent path plus its name');
      const newRoot = renames.find((r) => r.status === 200)!.body.folder.path;
      const created = results.slice(2, 5).filter((r) => r.status === 200).map((r) => r.body.folder.name).sort();
      const listed = await list({ projectId: P, environment: 'staging', path: `${newRoot}/sub` });
      t.same(listed.body.folders.map((f: any) => f.name).sort(), created, 'every folder answered 200 is under the new path');
      const writes = results.slice(5).filter((r) => r.status === 200).length;
      // A write that waited for the rename found no /busy/sub (404); one that went first
      // is audited under the path its folder had then.
      const [audited] = await sql`select count(*)::int as n from audit_log where project_id = ${P} and event_type = 'create-secret'
        and secret_key like 'RACE_%' and secret_path = '/busy/sub'`;
      t.equal(audited!.n, writes, 'each write audited once, under the path it was written to');
      t.same((await read(as, 'staging', `${newRoot}/sub`)).body.secrets.length, writes, 'every secret answered 200 is readable under the new path');
    });

    t.test('racing creates and deletes of the same folder: one wins, no 500', async (t) => {
      const body = { projectId: P, environment: 'prod', name: 'race', path: '/' };
      const made = await Promise.all([1, 2, 3, 4].map(() => api(svc, 'POST', FOLDERS, as, body)));
      t.same(made.map((r) => r.status).sort(), [200, 400, 400, 400], JSON.stringify(made.map((r) => r.body)));
      for (const r of made.filter((r) => r.status !== 200)) isError(t, r, 400, 'BadRequest', "Folder '/race' already exists");
      const removed = await Promise.all([1, 2, 3].map(() => api(svc, 'DELETE', `${FOLDERS}/race`, as, { projectId: P, environment: 'prod', path: '/' })));
      t.same(removed.map((r) => r.status).sort(), [200, 404, 404], JSON.stringify(removed.map((r) => r.body)));
      t.same((await list({ projectId: P, environment: 'prod' })).body.folders.filter((f: any) => f.name === 'race'), []);
    });

    t.test('permission boundaries: members manage folders, viewers list, others nothing', async (t) => {
      await folder('guarded', '/', 'prod');
      await folder('guarded', '/', 'prod', Q);
      const member = await machine(svc, 'f-member', [[P, 'member']]);
      const pAdmin = await machine(svc, 'f-admin', [[P, 'admin']]);
      const callers: Record<string, { token: string; reads?: boolean; stranger?: boolean }> = {
        'an identity with the viewer role': { ...(await machine(svc, 'f-viewer', [[P, 'viewer']])), reads: true },
        'an identity with the no-access role': await machine(svc, 'f-none', [[P, 'no-access']]),
        'an identity without membership': { ...(await machine(svc, 'f-stranger')), stranger: true },
        'a person without membership': { ...(await plainUser(svc, 'folder-stranger@example.test')), stranger: true },
      };
      const ops = (projectId: string): Array<[string, Method, string, unknown?]> => [
        ['list folders', 'GET', `${FOLDERS}?${qs({ projectId, environment: 'prod', path: '/' })}`],
        ['create a folder', 'POST', FOLDERS, { projectId, environment: 'prod', name: 'intruder', path: '/' }],
        ['rename a folder', 'PATCH', `${FOLDERS}/guarded`, { projectId, environment: 'prod', path: '/', name: 'renamed' }],
        ['delete a folder', 'DELETE', `${FOLDERS}/guarded`, { projectId, environment: 'prod', path: '/', force: true }],
      ];
      const before = await rows(svc);
      for (const [name, method, path, body] of ops(P)) {
        for (const [who, caller] of Object.entries(callers)) {
          if (method === 'GET' && caller.reads) {
            t.test(`${name}: ${who} may`, async (t) => t.equal((await api(svc, method, path, caller.token, body)).status, 200));
            continue;
          }
          // Not a member: as a missing project (404); a member without the right: 403.
          t.test(`${name}: ${who}`, async (t) =>
            caller.stranger
              ? isError(t, await api(svc, method, path, caller.token, body), 404, 'NotFound', `Project with ID '${P}' not found`)
              : isError(t, await api(svc, method, path, caller.token, body), 403, 'PermissionDenied', 'You are not allowed to access this resource'));
        }
        t.test(`${name}: no token`, async (t) => isError(t, await api(svc, method, path, undefined, body), 401, 'UnauthorizedError'));
      }
      for (const [name, method, path, body] of ops(Q)) {
        for (const [who, caller] of [['a member', member], ['an admin', pAdmin]] as const) {
          t.test(`${name}: ${who} of project A in project B`, async (t) =>
            isError(t, await api(svc, method, path, caller.token, body), 404, 'NotFound', `Project with ID '${Q}' not found`));
        }
      }
      for (const id of [MISSING, 'not-a-uuid', "x' or 1=1 --"]) {
        for (const [name, method, path, body] of ops(id)) {
          t.test(`${name}: unknown project ${id} is a 404 before any 403`, async (t) =>
            isError(t, await api(svc, method, path, callers['an identity without membership']!.token, body), 404, 'NotFound', /Project with ID/));
        }
      }
      t.test("project B's folder id through project A is not found", async (t) => {
        const [other] = (await list({ projectId: Q, environment: 'prod' })).body.folders;
        isError(t, await api(svc, 'DELETE', `${FOLDERS}/${other.id}`, pAdmin.token, { projectId: P, environment: 'prod', path: '/' }), 404, 'NotFound');
        isError(t, await api(svc, 'PATCH', `${FOLDERS}/${other.id}`, pAdmin.token, { projectId: P, environment: 'prod', path: '/', name: 'stolen' }), 404, 'NotFound');
      });
      t.test('nothing changed', async (t) => t.same(await rows(svc), before));

      t.test('a member creates, renames and deletes folders; an admin too', async (t) => {
        const made = await api(svc, 'POST', FOLDERS, member.token, { projectId: P, environment: 'prod', name: 'by-member', path: '/guarded' });
        t.equal(made.status, 200, JSON.stringify(made.body));
        t.equal((await api(svc, 'GET', `${FOLDERS}?${qs({ projectId: P, environment: 'prod', path: '/guarded' })}`, member.token)).body.folders.length, 1);
        const renamed = await api(svc, 'PATCH', `${FOLDERS}/${made.body.folder.id}`, member.token, { projectId: P, environment: 'prod', path: '/guarded', name: 'by-member2' });
        t.equal(renamed.body.folder?.path, '/guarded/by-member2', JSON.stringify(renamed.body));
        t.equal((await api(svc, 'DELETE', `${FOLDERS}/${made.body.folder.id}`, member.token, { projectId: P, environment: 'prod', path: '/guarded' })).status, 200);
        t.equal((await api(svc, 'PATCH', `${FOLDERS}/guarded`, pAdmin.token, { projectId: P, environment: 'prod', path: '/', name: 'guarded2' })).status, 200);
        t.equal((await api(svc, 'DELETE', `${FOLDERS}/guarded2`, pAdmin.token, { projectId: P, environment: 'prod', path: '/' })).status, 200);
        const events = await sql`select event_type, actor_type, actor_id from audit_log
          where project_id = ${P} and secret_path in ('/guarded/by-member', '/guarded/by-member2', '/guarded', '/guarded2') and actor_type = 'identity' order by id`;
        t.same(events.map((e) => [e.eventType, e.actorId]), [
          ['create-folder', member.identityId],
          ['update-folder', member.identityId],
          ['delete-folder', member.identityId],
          ['update-folder', pAdmin.identityId],
          ['delete-folder', pAdmin.identityId],
        ], 'audited as the identity that did it');
      });
    });

    t.test('bad input: a 4xx JSON answer, nothing changed', async (t) => {
      await folder('keep', '/', 'dev');
      await folder('sibling', '/', 'dev');
      await folder('child', '/keep', 'dev');
      await secret('dev', '/keep', 'KEPT');
      const devRoot = await rootOf(P, 'dev');
      const base = { projectId: P, environment: 'dev', path: '/' };
      const long = 'x'.repeat(5_000);
      const before = await rows(svc);
      const create: Array<[string, unknown, number]> = [
        ['a name that climbs', { ...base, name: '../x' }, 422],
        ['a name that is ..', { ...base, name: '..' }, 422],
        ['a name that is .', { ...base, name: '.' }, 422],
        ['a name with a slash', { ...base, name: 'a/b' }, 422],
        ['a name with a trailing slash', { ...base, name: 'x/' }, 422],
        ['a name with a leading slash', { ...base, name: '/x' }, 422],
        ['a name with a backslash', { ...base, name: 'a\\b' }, 422],
        ['a name with a space', { ...base, name: 'my app' }, 422],
        ['a name with a NUL', { ...base, name: 'a\u0000' }, 422],
        ['an empty name', { ...base, name: '' }, 422],
        ['a name of 65 characters', { ...base, name: 'n'.repeat(65) }, 422],
        ['an oversized name', { ...base, name: long }, 422],
        ['a name of the wrong type', { ...base, name: 5 }, 422],
        ['no name', { ...base }, 422],
        ['a path that climbs', { ...base, name: 'x', path: '/../x' }, 422],
        ['a relative path', { ...base, name: 'x', path: 'keep' }, 422],
        ['a path with ..', { ...base, name: 'x', path: '/keep/../keep' }, 422],
        ['a path with an empty segment', { ...base, name: 'x', path: '/keep//x' }, 422],
        ['a path of the wrong type', { ...base, name: 'x', path: ['/'] }, 422],
        ['an oversized path', { ...base, name: 'x', path: `/${long}` }, 422],
        ['a path too deep', { ...base, name: 'x', path: '/a'.repeat(21) }, 422],
        ['a parent that does not exist', { ...base, name: 'x', path: '/nowhere' }, 404],
        ['an existing folder', { ...base, name: 'keep' }, 400],
        ['no environment', { projectId: P, name: 'x' }, 422],
        ['an environment of the wrong type', { ...base, environment: 1, name: 'x' }, 422],
        ['an unknown environment', { ...base, environment: 'nope', name: 'x' }, 404],
        ['an oversized environment', { ...base, environment: long, name: 'x' }, 422],
        ['no projectId', { environment: 'dev', name: 'x' }, 422],
        ['a projectId of the wrong type', { ...base, projectId: 7, name: 'x' }, 422],
        ['an oversized projectId', { ...base, projectId: long, name: 'x' }, 422],
        ['an unknown projectId', { ...base, projectId: MISSING, name: 'x' }, 404],
        ['an array body', [{ ...base, name: 'x' }], 422],
        ['a string body', 'x', 422],
        ['a null body', null, 422],
      ];
      for (const [name, body, status] of create) t.test(`create: ${name}`, async (t) => isError(t, await api(svc, 'POST', FOLDERS, as, body), status));

      const lists: Array<[string, Record<string, string>, number]> = [
        ['no environment', { projectId: P }, 422],
        ['no project', { environment: 'dev' }, 422],
        ['a path that climbs', { ...base, path: '/../etc' }, 422],
        ['a relative path', { ...base, path: 'keep' }, 422],
        ['an encoded NUL in the path', { ...base, path: '/a\u0000' }, 422],
        ['an unknown path', { ...base, path: '/nowhere' }, 404],
        ['an unknown environment', { ...base, environment: 'nope' }, 404],
      ];
      for (const [name, q, status] of lists) t.test(`list: ${name}`, async (t) => isError(t, await list(q), status));

      const deletes: Array<[string, string, unknown, number]> = [
        ['an unknown name', 'nope', base, 404],
        ['an unknown id', MISSING, base, 404],
        ['..', '..', { ...base, path: '/keep' }, 404],
        ['an encoded path as the name', encodeURIComponent('keep/../keep'), base, 404],
        ['a folder that is not a direct child', 'keep', { ...base, path: '/keep' }, 404],
        ['a path that climbs', 'keep', { ...base, path: '/../' }, 422],
        ['an unknown parent', 'keep', { ...base, path: '/nowhere' }, 404],
        ['the root itself', 'root', base, 404],
        ['force=yes', 'keep', { ...base, force: 'yes' }, 422],
        ['force of the wrong type', 'keep', { ...base, force: 1 }, 422],
        ['no projectId', 'keep', { environment: 'dev' }, 422],
        ['no environment', 'keep', { projectId: P }, 422],
        ['an array body', 'keep', [base], 422],
        ['a string body', 'keep', 'keep', 422],
        ['a folder holding a secret', 'keep', base, 409],
      ];
      for (const [name, target, body, status] of deletes) {
        t.test(`delete: ${name}`, async (t) => isError(t, await api(svc, 'DELETE', `${FOLDERS}/${target}`, as, body), status));
      }
      const renames: Array<[string, string, unknown, number, string?]> = [
        ['a sibling\'s name', 'keep', { ...base, name: 'sibling' }, 400, "Folder '/sibling' already exists"],
        ['a name that climbs', 'keep', { ...base, name: '../x' }, 422],
        ['a name that is ..', 'keep', { ...base, name: '..' }, 422],
        ['a name with a slash', 'keep', { ...base, name: 'a/b' }, 422],
        ['a name with a trailing slash', 'keep', { ...base, name: 'x/' }, 422],
        ['a name with a space', 'keep', { ...base, name: 'my app' }, 422],
        ['a name with a NUL', 'keep', { ...base, name: 'a\u0000' }, 422],
        ['a name with a lone surrogate', 'keep', { ...base, name: 'a\ud800' }, 422],
        ['an empty name', 'keep', { ...base, name: '' }, 422],
        ['a name of 65 characters', 'keep', { ...base, name: 'n'.repeat(65) }, 422],
        ['a name of the wrong type', 'keep', { ...base, name: ['x'] }, 422],
        ['no name', 'keep', { ...base }, 422],
        ['the root, by id', devRoot.id, { ...base, name: 'x' }, 400, 'The root folder cannot be renamed'],
        ['the root, by name', 'root', { ...base, name: 'x' }, 404],
        ['an unknown id', MISSING, { ...base, name: 'x' }, 404],
        ['an unknown name', 'nope', { ...base, name: 'x' }, 404],
        ['a folder that is not a direct child', 'child', { ...base, name: 'x' }, 404],
        ['a path that climbs', 'keep', { ...base, path: '/../', name: 'x' }, 422],
        ['an unknown parent', 'keep', { ...base, path: '/nowhere', name: 'x' }, 404],
        ['an unknown environment', 'keep', { ...base, environment: 'nope', name: 'x' }, 404],
        ['no environment', 'keep', { projectId: P, name: 'x' }, 422],
        ['no projectId', 'keep', { environment: 'dev', name: 'x' }, 422],
        ['an unknown projectId', 'keep', { ...base, projectId: MISSING, name: 'x' }, 404],
        ['an array body', 'keep', [{ ...base, name: 'x' }], 422],
        ['a string body', 'keep', 'x', 422],
      ];
      for (const [name, target, body, status, message] of renames) {
        t.test(`rename: ${name}`, async (t) => isError(t, await api(svc, 'PATCH', `${FOLDERS}/${target}`, as, body), status, undefined, message));
      }
      t.test('malformed JSON and other media types', async (t) => {
        for (const [method, path] of [['POST', FOLDERS], ['PATCH', `${FOLDERS}/keep`], ['DELETE', `${FOLDERS}/keep`]] as const) {
          const url = `${svc.url}${path}`;
          isError(t, await request(url, { method, token: as, headers: { 'content-type': 'application/json' }, body: '{"projectId":' }), 400, 'BadRequest', 'Malformed JSON body');
          isError(t, await request(url, { method, token: as, headers: { 'content-type': 'text/plain' }, body: 'keep' }), 415);
        }
        isError(t, await api(svc, 'DELETE', `${FOLDERS}/%E0%A4%A?${qs(base)}`, as), 400, 'BadRequest', /percent-encoding/);
      });
      t.test('nothing changed', async (t) => t.same(await rows(svc), before));
      t.test('form bodies work', async (t) => {
        const r = await request(`${svc.url}${FOLDERS}`, {
          method: 'POST', token: as, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: qs({ ...base, name: 'from-a-form' }),
        });
        t.equal(r.status, 200);
        t.equal(r.body.folder?.path, '/from-a-form');
      });
      t.test('rename: a path that would grow beyond 1024 characters below', async (t) => {
        const long = (c: string) => c.repeat(60);
        let at = '/keep';
        for (const c of 'abcdefghijklmnop') {
          await folder(long(c), at, 'dev');
          at = `${at}/${long(c)}`;
        }
        t.ok(at.length <= 1024 && at.length > 1024 - 59, `deepest path ${at.length} characters`);
        const folders = (await rows(svc)).folders;
        isError(t, await api(svc, 'PATCH', `${FOLDERS}/keep`, as, { ...base, name: 'k'.repeat(64) }), 422, 'ValidationFailure', /longer than 1024 characters/);
        t.equal((await rows(svc)).folders, folders);
        t.equal((await api(svc, 'DELETE', `${FOLDERS}/${long('a')}`, as, { ...base, path: '/keep' })).status, 200, 'clean up');
      });
    });
  });
}
