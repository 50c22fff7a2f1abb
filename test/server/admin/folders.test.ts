// Folders over HTTP: members (and admins) create and delete folders, viewers list them;
// a delete that would take secrets with it needs force=true (and overrideImmutable=true
// for keys that must never change) and audits every secret it removes; a folder name is
// one path segment and a path never climbs out of the environment; bad input changes
// nothing.
import t from 'tap';
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
      svc.services.projects.createFolder(SYSTEM, { project: { id: projectId }, environment, parentPath: path, name });
    const deleteSecretEvents = (secretPathPrefix: string) =>
      sql<{ environment: string; secretPath: string; secretKey: string; secretVersion: number; metadata: any }[]>`
        select environment, secret_path, secret_key, secret_version, metadata from audit_log
        where project_id = ${P} and event_type = 'delete-secret' and starts_with(secret_path, ${secretPathPrefix}) order by id`;

    t.test('create, list and delete folders: exact shapes', async (t) => {
      const root = await rootOf(P, 'dev');
      const r = await api(svc, 'POST', FOLDERS, as, { projectId: P, environment: 'dev', name: 'app', path: '/' });
      t.equal(r.status, 200, JSON.stringify(r.body));
      const app = r.body.folder;
      t.same(r.body, { folder: { id: app.id, name: 'app', path: '/app', parentId: root.id, envId: root.environmentId } });
      t.match(app.id, UUID);
      const db = await api(svc, 'POST', FOLDERS, as, { projectId: P, environment: 'dev', name: 'db', path: '/app' });
      t.same(db.body, { folder: { id: db.body.folder.id, name: 'db', path: '/app/db', parentId: app.id, envId: root.environmentId } });
      const noPath = await api(svc, 'POST', FOLDERS, as, { workspaceId: P, environment: 'dev', name: 'cache' });
      t.equal(noPath.body.folder?.path, '/cache', 'the path defaults to /, and workspaceId names the project too');
      const older = await api(svc, 'POST', FOLDERS, as, { projectId: P, environment: 'dev', name: 'web', directory: '/app/' });
      t.equal(older.body.folder?.path, '/app/web', 'the older "directory" with a trailing slash');

      const top = await list({ projectId: P, environment: 'dev', path: '/' });
      t.equal(top.status, 200);
      t.same(top.body, {
        folders: [
          { id: app.id, name: 'app', path: '/app', parentId: root.id },
          { id: noPath.body.folder.id, name: 'cache', path: '/cache', parentId: root.id },
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
      t.same(byName.body, { folder: { id: noPath.body.folder.id, name: 'cache', path: '/cache', parentId: root.id } });
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
      isError(t, await api(svc, 'DELETE', `${FOLDERS}/svc`, as, scope), 409, 'Conflict', "Folder '/svc' holds 2 secrets; pass force=true to delete it with them");
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
        ['delete a folder', 'DELETE', `${FOLDERS}/guarded`, { projectId, environment: 'prod', path: '/', force: true }],
      ];
      const before = await rows(svc);
      for (const [name, method, path, body] of ops(P)) {
        for (const [who, caller] of Object.entries(callers)) {
          if (method === 'GET' && caller.reads) {
            t.test(`${name}: ${who} may`, async (t) => t.equal((await api(svc, method, path, caller.token, body)).status, 200));
            continue;
          }
          t.test(`${name}: ${who}`, async (t) =>
            isError(t, await api(svc, method, path, caller.token, body), 403, 'PermissionDenied',
              caller.stranger ? 'You are not member of this project' : 'You are not allowed to access this resource'));
        }
        t.test(`${name}: no token`, async (t) => isError(t, await api(svc, method, path, undefined, body), 401, 'UnauthorizedError'));
      }
      for (const [name, method, path, body] of ops(Q)) {
        for (const [who, caller] of [['a member', member], ['an admin', pAdmin]] as const) {
          t.test(`${name}: ${who} of project A in project B`, async (t) =>
            isError(t, await api(svc, method, path, caller.token, body), 403, 'PermissionDenied', 'You are not member of this project'));
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
      });
      t.test('nothing changed', async (t) => t.same(await rows(svc), before));

      t.test('a member creates and deletes folders; an admin too', async (t) => {
        const made = await api(svc, 'POST', FOLDERS, member.token, { projectId: P, environment: 'prod', name: 'by-member', path: '/guarded' });
        t.equal(made.status, 200, JSON.stringify(made.body));
        t.equal((await api(svc, 'GET', `${FOLDERS}?${qs({ projectId: P, environment: 'prod', path: '/guarded' })}`, member.token)).body.folders.length, 1);
        t.equal((await api(svc, 'DELETE', `${FOLDERS}/${made.body.folder.id}`, member.token, { projectId: P, environment: 'prod', path: '/guarded' })).status, 200);
        t.equal((await api(svc, 'DELETE', `${FOLDERS}/guarded`, pAdmin.token, { projectId: P, environment: 'prod', path: '/' })).status, 200);
        const events = await sql`select event_type, actor_type, actor_id from audit_log
          where project_id = ${P} and secret_path in ('/guarded/by-member', '/guarded') and actor_type = 'identity' order by id`;
        t.same(events.map((e) => [e.eventType, e.actorId]), [
          ['create-folder', member.identityId],
          ['delete-folder', member.identityId],
          ['delete-folder', pAdmin.identityId],
        ], 'audited as the identity that did it');
      });
    });

    t.test('bad input: a 4xx JSON answer, nothing changed', async (t) => {
      await folder('keep', '/', 'dev');
      await secret('dev', '/keep', 'KEPT');
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
      t.test('malformed JSON and other media types', async (t) => {
        for (const [method, path] of [['POST', FOLDERS], ['DELETE', `${FOLDERS}/keep`]] as const) {
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
    });
  });
}
