// Projects and environments over HTTP: people create projects (and administer those
// they created), project admins and the superadmin change and delete them; a slug
// change is seen at once, through every cache and on every replica; a delete that
// would take secrets with it needs force=true (and overrideImmutable=true for keys that
// must never change) and audits each secret and membership it removes; bad input
// changes nothing.
import t from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { request } from '../../helpers/http.js';
import { rawExchange } from '../../helpers/rawSocket.js';
import { BACKENDS, startTestService, testEnv, type TestService } from '../../helpers/service.js';
import { api, isError, machine, plainUser, snapshot, superadmin, type Method } from './helpers.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const PROJECT_KEYS = ['_id', 'createdAt', 'environments', 'id', 'name', 'orgId', 'slug', 'updatedAt', 'version'];
const DEFAULT_ENVS = [
  { name: 'Development', slug: 'dev', position: 0 },
  { name: 'Staging', slug: 'staging', position: 1 },
  { name: 'Production', slug: 'prod', position: 2 },
];
const MISSING = '5d1f7c4e-0000-4000-8000-000000000000';

const projects = '/api/v1/projects';
const project = (id: string) => `${projects}/${id}`;
const envs = (id: string) => `${projects}/${id}/environments`;
const env = (id: string, envId: string) => `${envs(id)}/${envId}`;

/** The admin helpers' row counts, plus what these routes change (names and slugs included). */
async function rows(svc: TestService) {
  const sql = svc.services.store.sql;
  const [row] = await sql<Record<string, unknown>[]>`select
    (select count(*)::int from projects) as projects,
    (select string_agg(slug || ':' || name, ',' order by id) from projects) as project_names,
    (select count(*)::int from environments) as environments,
    (select string_agg(slug || ':' || name || ':' || position, ',' order by id) from environments) as environment_names,
    (select count(*)::int from folders) as folders,
    (select count(*)::int from secrets) as secrets,
    (select count(*)::int from secret_versions) as secret_versions,
    (select count(*)::int from crypto_keys) as crypto_keys`;
  return { ...(await snapshot(svc)), ...row };
}

/** Everything stored for one project, by table (all zero once it is deleted). */
async function footprint(svc: TestService, projectId: string) {
  const [row] = await svc.services.store.sql<Record<string, number>[]>`select
    (select count(*)::int from projects where id = ${projectId}) as projects,
    (select count(*)::int from environments where project_id = ${projectId}) as environments,
    (select count(*)::int from folders f join environments e on e.id = f.environment_id where e.project_id = ${projectId}) as folders,
    (select count(*)::int from secrets s join folders f on f.id = s.folder_id join environments e on e.id = f.environment_id
      where e.project_id = ${projectId}) as secrets,
    (select count(*)::int from secret_versions v join folders f on f.id = v.folder_id join environments e on e.id = f.environment_id
      where e.project_id = ${projectId}) as secret_versions,
    (select count(*)::int from project_memberships where project_id = ${projectId}) as memberships`;
  return row!;
}

async function auditOf(svc: TestService, projectId: string, eventType: string) {
  return svc.services.store.sql<{ actorType: string; actorId: string | null; environment: string | null; metadata: any }[]>`
    select actor_type, actor_id, environment, metadata from audit_log where project_id = ${projectId} and event_type = ${eventType} order by id`;
}

/** ESO's list read of one environment's root, by project slug. */
const read = (svc: TestService, token: string, slug: string, environment = 'dev') =>
  request(`${svc.url}/api/v3/secrets/raw?workspaceSlug=${encodeURIComponent(slug)}&environment=${environment}&secretPath=%2F`, { token });

/** A secret, through the domain (set-up, not under test here). */
const secret = (svc: TestService, projectId: string, environment: string, key: string, secretPath = '/') =>
  svc.services.secrets.create(SYSTEM, { project: { id: projectId }, environment, secretPath, key, value: `value of ${key}` });

for (const backend of BACKENDS) {
  t.test(`projects and environments (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend));
    const admin = await superadmin(svc);
    const as = admin.token;
    const create = async (body: unknown, token = as) => {
      const r = await api(svc, 'POST', projects, token, body);
      if (r.status !== 200) throw new Error(`create failed: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.project;
    };

    t.test('create a project: the exact shape, a derived slug, the default environments', async (t) => {
      const r = await api(svc, 'POST', projects, as, { projectName: 'Home Lab' });
      t.equal(r.status, 200, JSON.stringify(r.body));
      const p = r.body.project;
      t.same(Object.keys(p).sort(), PROJECT_KEYS, 'exactly the documented fields');
      t.match(p, { id: UUID, _id: p.id, name: 'Home Lab', slug: 'home-lab', orgId: UUID, version: 3, createdAt: ISO, updatedAt: ISO });
      t.same(p.environments.map(({ id: _id, ...rest }: any) => rest), DEFAULT_ENVS, 'dev, staging, prod in that order');
      t.ok(p.environments.every((e: any) => UUID.test(e.id) && Object.keys(e).length === 4));

      t.equal((await create({ projectName: 'homelab' })).slug, 'homelab', 'a name that is a slug is its own slug');
      t.equal((await create({ projectName: '  Ünïcode Stuff!! ' })).slug, 'unicode-stuff', 'accents and punctuation fold');
      const explicit = await create({ projectName: 'Explicit', slug: 'my-slug' });
      t.match(explicit, { name: 'Explicit', slug: 'my-slug' });

      const got = await api(svc, 'GET', project(p.id), as);
      t.equal(got.status, 200);
      t.same(got.body.project, p, 'GET answers what POST answered');
      t.equal((await api(svc, 'GET', project(p.id.toUpperCase()), as)).body.project?.id, p.id, 'ids are case-insensitive');
      const bySlug = await api(svc, 'GET', `${projects}/slug/home-lab`, as);
      t.equal(bySlug.body.id, p.id, 'the slug resolves');
      t.equal((await read(svc, as, 'home-lab', 'prod')).status, 200, 'every default environment has its root folder');

      isError(t, await api(svc, 'POST', projects, as, { projectName: 'Home  Lab?' }), 400, 'BadRequest', "A project with slug 'home-lab' already exists");
      isError(t, await api(svc, 'POST', projects, as, { projectName: 'Other', slug: 'my-slug' }), 400, 'BadRequest', /already exists/);

      // The browser session needs its CSRF token to change anything.
      const noCsrf = await request(`${svc.url}${projects}`, { method: 'POST', headers: { cookie: admin.cookie }, json: { projectName: 'csrf' } });
      isError(t, noCsrf, 403, 'PermissionDenied', /CSRF/);
      const withCsrf = await request(`${svc.url}${projects}`, {
        method: 'POST', headers: { cookie: admin.cookie, 'x-csrf-token': admin.csrfToken }, json: { projectName: 'csrf' },
      });
      t.equal(withCsrf.status, 200);

      const [created] = await auditOf(svc, p.id, 'create-project');
      t.match(created, { actorType: 'user', actorId: admin.userId, metadata: { slug: 'home-lab' } }, 'audited as the superadmin');
    });

    t.test('a person who creates a project administers it; a machine identity may not create one', async (t) => {
      const pat = await plainUser(svc, 'pat@example.test');
      const r = await api(svc, 'POST', projects, pat.token, { projectName: "Pat's" });
      t.equal(r.status, 200, JSON.stringify(r.body));
      const p = r.body.project;
      const [m] = await svc.services.store.sql`select role from project_memberships where project_id = ${p.id} and user_id = ${pat.userId}`;
      t.equal(m?.role, 'admin', 'the creator is the project admin');
      t.equal((await api(svc, 'PATCH', project(p.id), pat.token, { name: 'Pat renamed' })).status, 200);
      const e = await api(svc, 'POST', envs(p.id), pat.token, { name: 'QA', slug: 'qa' });
      t.equal(e.status, 200);
      t.equal((await api(svc, 'DELETE', env(p.id, e.body.environment.id), pat.token)).status, 200);
      const [audit] = await auditOf(svc, p.id, 'create-project');
      t.match(audit, { actorType: 'user', actorId: pat.userId });

      const listed = await api(svc, 'GET', projects, pat.token);
      t.same(listed.body.projects.map((x: any) => x.id), [p.id], 'a person lists only the projects they belong to');

      const before = await rows(svc);
      const bot = await machine(svc, 'bot', [[p.id, 'admin']]);
      const after = await rows(svc);
      isError(t, await api(svc, 'POST', projects, bot.token, { projectName: 'machine-made' }), 403, 'PermissionDenied', /Machine identities/);
      t.same(await rows(svc), after, 'nothing created');
      t.not(before.identities, after.identities);
      t.equal((await api(svc, 'DELETE', project(p.id), pat.token)).status, 200, 'and deletes it');
    });

    t.test('list: the superadmin sees every project, others those they are a member of', async (t) => {
      const a = await create({ projectName: 'list-a' });
      const b = await create({ projectName: 'list-b' });
      const all = await api(svc, 'GET', projects, as);
      t.equal(all.status, 200);
      const slugs = all.body.projects.map((p: any) => p.slug);
      t.ok(['home-lab', 'homelab', 'list-a', 'list-b'].every((s) => slugs.includes(s)), JSON.stringify(slugs));
      const listedA = all.body.projects.find((p: any) => p.id === a.id);
      t.same(listedA, a, 'listed in the same shape');

      const m = await machine(svc, 'lister', [[b.id, 'viewer']]);
      const mine = await api(svc, 'GET', projects, m.token);
      t.equal(mine.status, 200);
      t.same(mine.body.projects.map((p: any) => p.id), [b.id]);
      const none = await machine(svc, 'lonely');
      t.same((await api(svc, 'GET', projects, none.token)).body, { projects: [] });
      // no-access may not open the project, so it is not listed either.
      const barred = await machine(svc, 'barred', [[a.id, 'no-access'], [b.id, 'viewer']]);
      t.same((await api(svc, 'GET', projects, barred.token)).body.projects.map((p: any) => p.id), [b.id], 'no-access hides the project');
      isError(t, await api(svc, 'GET', projects), 401, 'UnauthorizedError');
      // Older clients send a JSON body on GET, and unknown query parameters.
      const raw = await rawExchange(svc.port, [
        `GET ${projects}?foo=bar&workspaceId= HTTP/1.1`, 'Host: localhost', `Authorization: Bearer ${m.token}`,
        'Content-Type: application/json', 'Content-Length: 2', 'Connection: close', '', '{}',
      ].join('\r\n'));
      t.match(raw.data, /^HTTP\/1\.1 200 /);
      t.same(JSON.parse(raw.data.slice(raw.data.indexOf('\r\n\r\n') + 4)), mine.body);
    });

    t.test('rename and re-slug: the old slug stops resolving at once', async (t) => {
      const p = await create({ projectName: 'Before' });
      const reader = await machine(svc, 'slug-reader', [[p.id, 'viewer']]);
      // Warm every cache that knows the slug: the slug lookup, the v3 read, the id lookup.
      t.equal((await api(svc, 'GET', `${projects}/slug/before`, reader.token)).status, 200);
      t.equal((await read(svc, reader.token, 'before')).status, 200);
      t.equal((await api(svc, 'GET', project(p.id), reader.token)).status, 200);
      // And a negative entry for the new slug.
      isError(t, await read(svc, reader.token, 'after'), 404, 'NotFound', "Project with slug 'after' not found");

      const r = await api(svc, 'PATCH', project(p.id), as, { slug: 'after' });
      t.equal(r.status, 200, JSON.stringify(r.body));
      t.same(Object.keys(r.body.project).sort(), PROJECT_KEYS);
      t.match(r.body.project, { id: p.id, name: 'Before', slug: 'after', createdAt: p.createdAt });
      t.same(r.body.project.environments, p.environments);
      t.ok(r.body.project.updatedAt >= p.updatedAt);

      isError(t, await api(svc, 'GET', `${projects}/slug/before`, reader.token), 404, 'NotFound', "Project with slug 'before' not found");
      isError(t, await read(svc, reader.token, 'before'), 404, 'NotFound');
      t.equal((await api(svc, 'GET', `${projects}/slug/after`, reader.token)).body.id, p.id, 'the new slug resolves');
      t.equal((await read(svc, reader.token, 'after')).status, 200);
      t.equal((await api(svc, 'GET', project(p.id), reader.token)).body.project.slug, 'after', 'the id lookup shows the new slug');

      const renamed = await api(svc, 'PATCH', project(p.id), as, { name: '  After all ' });
      t.equal(renamed.body.project.name, 'After all', 'names are trimmed');
      t.equal((await api(svc, 'GET', `${projects}/slug/after`, reader.token)).body.name, 'After all');

      // Back to the old slug: the "not found" the first change left behind is gone too.
      t.equal((await api(svc, 'PATCH', project(p.id), as, { slug: 'before', name: 'Before' })).body.project.slug, 'before');
      t.equal((await read(svc, reader.token, 'before')).status, 200);
      isError(t, await read(svc, reader.token, 'after'), 404, 'NotFound');

      const audit = await auditOf(svc, p.id, 'update-project');
      t.same(audit.map((a) => a.metadata), [
        { oldSlug: 'before', slug: 'after' },
        { oldName: 'Before', name: 'After all' },
        { oldSlug: 'after', slug: 'before', oldName: 'After all', name: 'Before' },
      ]);
      t.ok(audit.every((a) => a.actorType === 'user' && a.actorId === admin.userId));

      const n = (await rows(svc)).audit;
      const same = await api(svc, 'PATCH', project(p.id), as, { name: 'Before', slug: 'before' });
      t.equal(same.status, 200, 'a change to the same values is a no-op');
      t.equal((await api(svc, 'PATCH', project(p.id), as, {})).status, 200, 'as is an empty change');
      t.equal((await rows(svc)).audit, n, 'and neither is audited');

      const before = await rows(svc);
      isError(t, await api(svc, 'PATCH', project(p.id), as, { slug: 'home-lab' }), 400, 'BadRequest', /already exists/);
      t.same(await rows(svc), before, 'a taken slug changes nothing');
    });

    if (backend === 'postgres+redis') {
      t.test('a slug change on one replica is seen at once on another', async (t) => {
        const B = await startTestService(t, svc.env);
        const p = await create({ projectName: 'replicated' });
        const reader = await machine(svc, 'replica-reader', [[p.id, 'viewer']]);
        t.equal((await read(B, reader.token, 'replicated')).status, 200, 'B caches the slug');
        // And the new slug as unknown.
        isError(t, await read(B, reader.token, 'moved'), 404, 'NotFound', "Project with slug 'moved' not found");
        t.equal((await api(svc, 'PATCH', project(p.id), as, { slug: 'moved' })).status, 200);
        isError(t, await read(B, reader.token, 'replicated'), 404, 'NotFound', "Project with slug 'replicated' not found");
        isError(t, await api(B, 'GET', `${projects}/slug/replicated`, reader.token), 404, 'NotFound');
        t.equal((await read(B, reader.token, 'moved')).status, 200);
        t.equal((await api(B, 'GET', project(p.id), as)).body.project.slug, 'moved');

        const e = p.environments.find((x: any) => x.slug === 'dev');
        t.equal((await api(svc, 'PATCH', env(p.id, e.id), as, { slug: 'development' })).status, 200);
        isError(t, await read(B, reader.token, 'moved', 'dev'), 404, 'NotFound', /Environment/);
        t.equal((await read(B, reader.token, 'moved', 'development')).status, 200, 'an environment slug change too');

        t.equal((await api(svc, 'DELETE', project(p.id), as)).status, 200);
        // A deleted project is gone on B at once.
        isError(t, await read(B, reader.token, 'moved'), 404, 'NotFound', "Project with slug 'moved' not found");
        isError(t, await api(B, 'GET', project(p.id), as), 404, 'NotFound');
      });
    }

    t.test('delete a project: refused while it holds secrets, everything goes with force=true', async (t) => {
      const p = await create({ projectName: 'doomed' });
      await svc.services.folders.create(SYSTEM, { project: { id: p.id }, environment: 'staging', parentPath: '/', name: 'app' });
      await secret(svc, p.id, 'dev', 'ONE');
      await secret(svc, p.id, 'staging', 'TWO', '/app');
      const reader = await machine(svc, 'doomed-reader', [[p.id, 'member']]);
      t.equal((await read(svc, reader.token, 'doomed')).body.secrets.length, 1, 'the member reads (and caches) the project');

      const before = await rows(svc);
      for (const q of ['', '?force=false']) {
        isError(t, await api(svc, 'DELETE', `${project(p.id)}${q}`, as), 409, 'Conflict', "Project 'doomed' holds 2 secrets; pass force=true to delete it with them");
      }
      t.same(await rows(svc), before, 'nothing deleted');
      t.equal((await read(svc, reader.token, 'doomed')).body.secrets.length, 1, 'still readable');

      const r = await api(svc, 'DELETE', `${project(p.id)}?force=true`, as);
      t.equal(r.status, 200, JSON.stringify(r.body));
      t.same(r.body.project, p, 'answers the project it deleted');
      t.same(await footprint(svc, p.id), { projects: 0, environments: 0, folders: 0, secrets: 0, secretVersions: 0, memberships: 0 });
      const keys = await svc.services.store.sql`select count(*)::int as n from crypto_keys k
        where k.purpose = 'project' and not exists (select 1 from projects p where p.data_key_id = k.id)`;
      t.equal(keys[0]!.n, 0, 'its data key is gone too');
      isError(t, await api(svc, 'GET', project(p.id), as), 404, 'NotFound', `Project with ID '${p.id}' not found`);
      isError(t, await read(svc, reader.token, 'doomed'), 404, 'NotFound', "Project with slug 'doomed' not found");
      isError(t, await api(svc, 'DELETE', `${project(p.id)}?force=true`, as), 404, 'NotFound', /not found/);

      const [audit] = await auditOf(svc, p.id, 'delete-project');
      t.match(audit, { actorType: 'user', actorId: admin.userId, metadata: { slug: 'doomed', name: 'doomed', secretsDeleted: 2, membershipsDeleted: 2 } });
      const cascade = await svc.services.store.sql`select event_type, actor_id, environment, secret_path, secret_key, secret_version, metadata
        from audit_log where project_id = ${p.id} and event_type in ('delete-secret', 'remove-identity-from-project', 'remove-workspace-member', 'delete-project')
        order by id`;
      t.same(cascade.map((e) => [e.eventType, e.environment, e.secretPath, e.secretKey, e.secretVersion, e.metadata]), [
        ['delete-secret', 'dev', '/', 'ONE', 1, { cascade: 'delete-project' }],
        ['delete-secret', 'staging', '/app', 'TWO', 1, { cascade: 'delete-project' }],
        ['remove-identity-from-project', null, null, null, null, { identityId: reader.identityId, role: 'member', cascade: 'delete-project' }],
        ['remove-workspace-member', null, null, null, null, { userId: admin.userId, role: 'admin', cascade: 'delete-project' }],
        ['delete-project', null, null, null, null, { slug: 'doomed', name: 'doomed', secretsDeleted: 2, membershipsDeleted: 2 }],
      ], 'one entry per secret (name, path, environment, version) and per membership, in the same transaction');
      t.ok(cascade.every((e) => e.actorId === admin.userId), 'all as the one who deleted');
      t.notOk(JSON.stringify(cascade).includes('value of'), 'never a value');

      const empty = await create({ projectName: 'empty' });
      t.equal((await api(svc, 'DELETE', project(empty.id), as)).status, 200, 'an empty project needs no force');
      t.equal((await create({ projectName: 'doomed' })).slug, 'doomed', 'the slug is free again');
    });

    t.test('environments: create, rename, re-slug, delete', async (t) => {
      const p = await create({ projectName: 'envs' });
      const reader = await machine(svc, 'env-reader', [[p.id, 'viewer']]);
      const r = await api(svc, 'POST', envs(p.id), as, { name: ' Quality ', slug: 'qa' });
      t.equal(r.status, 200, JSON.stringify(r.body));
      const qa = r.body.environment;
      t.same(r.body, { environment: { id: qa.id, name: 'Quality', slug: 'qa', position: 3 } }, 'exactly the documented fields, last in order');
      t.match(qa.id, UUID);
      t.same((await api(svc, 'GET', project(p.id), as)).body.project.environments.map((e: any) => e.slug), ['dev', 'staging', 'prod', 'qa']);
      t.same((await read(svc, reader.token, 'envs', 'qa')).body.secrets, [], 'readable at once, with its root folder');
      isError(t, await api(svc, 'POST', envs(p.id), as, { name: 'Again', slug: 'qa' }), 400, 'BadRequest', "Environment with slug 'qa' already exists");

      await secret(svc, p.id, 'qa', 'QA_KEY');
      const renamed = await api(svc, 'PATCH', env(p.id, qa.id), as, { name: 'QA' });
      t.same(renamed.body, { environment: { ...qa, name: 'QA' } });
      const moved = await api(svc, 'PATCH', env(p.id, qa.id.toUpperCase()), as, { slug: 'test' });
      t.same(moved.body, { environment: { ...qa, name: 'QA', slug: 'test' } }, 'upper-case ids work');
      isError(t, await read(svc, reader.token, 'envs', 'qa'), 404, 'NotFound', "Environment with slug 'qa' in project 'envs' not found");
      t.same((await read(svc, reader.token, 'envs', 'test')).body.secrets.map((s: any) => [s.secretKey, s.environment]), [['QA_KEY', 'test']]);
      isError(t, await api(svc, 'PATCH', env(p.id, qa.id), as, { slug: 'prod' }), 400, 'BadRequest', /already exists/);
      t.equal((await api(svc, 'PATCH', env(p.id, qa.id), as, { slug: 'test', name: 'QA' })).status, 200, 'unchanged values are fine');

      const before = await rows(svc);
      isError(t, await api(svc, 'DELETE', env(p.id, qa.id), as), 409, 'Conflict', "Environment 'test' holds 1 secret; pass force=true to delete it with them");
      t.same(await rows(svc), before, 'nothing deleted');
      const gone = await api(svc, 'DELETE', `${env(p.id, qa.id)}?force=true`, as);
      t.same(gone.body, { environment: { ...qa, name: 'QA', slug: 'test' } });
      const after = await rows(svc);
      t.equal(after.environments, (before.environments as number) - 1);
      t.equal(after.secrets, (before.secrets as number) - 1, 'its secret went with it');
      isError(t, await read(svc, reader.token, 'envs', 'test'), 404, 'NotFound');
      isError(t, await api(svc, 'DELETE', `${env(p.id, qa.id)}?force=true`, as), 404, 'NotFound', /Environment with ID/);

      const staging = p.environments.find((e: any) => e.slug === 'staging');
      t.equal((await api(svc, 'DELETE', env(p.id, staging.id), as)).status, 200, 'an empty environment needs no force');
      const next = await api(svc, 'POST', envs(p.id), as, { name: 'Next', slug: 'next' });
      t.equal(next.body.environment.position, 3, 'positions keep growing after the last one');

      const events = await svc.services.store.sql<{ eventType: string; environment: string; metadata: any }[]>`
        select event_type, environment, metadata from audit_log where project_id = ${p.id} and event_type like '%-environment' order by id`;
      t.same(events.map((e) => [e.eventType, e.environment]), [
        ['create-environment', 'qa'],
        ['update-environment', 'qa'],
        ['update-environment', 'test'],
        ['delete-environment', 'test'],
        ['delete-environment', 'staging'],
        ['create-environment', 'next'],
      ]);
      t.same(events[2]!.metadata, { environmentId: qa.id, oldSlug: 'qa' });
      t.same(events[3]!.metadata, { environmentId: qa.id, secretsDeleted: 1 });
      const removed = await auditOf(svc, p.id, 'delete-secret');
      t.same(removed.map((e) => [e.environment, e.metadata]), [['test', { cascade: 'delete-environment' }]], 'its secret has its own entry');
      const [row] = await svc.services.store.sql`select secret_path, secret_key, secret_version from audit_log where project_id = ${p.id} and event_type = 'delete-secret'`;
      t.same(row, { secretPath: '/', secretKey: 'QA_KEY', secretVersion: 1 });
    });

    t.test('a forced delete of keys that must never change also needs overrideImmutable=true', async (t) => {
      const p = await create({ projectName: 'pinned' });
      const e = p.environments.find((x: any) => x.slug === 'prod');
      await secret(svc, p.id, 'prod', 'PLAIN');
      await svc.services.secrets.create(SYSTEM, { project: { id: p.id }, environment: 'prod', key: 'IDP_SECRET_KEY', value: 'f'.repeat(64), immutable: true });
      await svc.services.secrets.create(SYSTEM, { project: { id: p.id }, environment: 'dev', key: 'DEV_PINNED', value: 'pinned in dev', immutable: true });
      const before = await rows(svc);
      isError(t, await api(svc, 'DELETE', env(p.id, e.id), as), 409, 'Conflict', "Environment 'prod' holds 2 secrets; pass force=true to delete it with them");
      for (const q of ['?force=true', '?force=true&overrideImmutable=false']) {
        const r = await api(svc, 'DELETE', `${env(p.id, e.id)}${q}`, as);
        isError(t, r, 409, 'Conflict', "Environment 'prod' holds 1 secret marked as never changing; pass overrideImmutable=true as well to delete it");
        t.same(r.body.details, { requires: 'overrideImmutable' }, 'details say what a repeat needs');
        t.notMatch(r.body.message, /IDP_SECRET_KEY|ffff/, 'a count, neither names nor values');
      }
      isError(t, await api(svc, 'DELETE', `${env(p.id, e.id)}?overrideImmutable=true`, as), 409, 'Conflict', /pass force=true/);
      isError(t, await api(svc, 'DELETE', `${env(p.id, e.id)}?force=true&overrideImmutable=yes`, as), 422, 'ValidationFailure');
      isError(t, await api(svc, 'DELETE', `${project(p.id)}?force=true`, as), 409, 'Conflict',
        "Project 'pinned' holds 2 secrets marked as never changing; pass overrideImmutable=true as well to delete them");
      isError(t, await api(svc, 'DELETE', `${project(p.id)}?force=true&overrideImmutable=1`, as), 422, 'ValidationFailure');
      t.same(await rows(svc), before, 'nothing deleted');

      const gone = await api(svc, 'DELETE', `${env(p.id, e.id)}?force=true&overrideImmutable=true`, as);
      t.equal(gone.status, 200, JSON.stringify(gone.body));
      const r = await api(svc, 'DELETE', `${project(p.id)}?force=true&overrideImmutable=true`, as);
      t.equal(r.status, 200, JSON.stringify(r.body));
      t.same(await footprint(svc, p.id), { projects: 0, environments: 0, folders: 0, secrets: 0, secretVersions: 0, memberships: 0 });
      const removed = await svc.services.store.sql`select environment, secret_key, metadata from audit_log
        where project_id = ${p.id} and event_type = 'delete-secret' order by id`;
      t.same(removed.map((x) => [x.environment, x.secretKey, x.metadata]), [
        ['prod', 'IDP_SECRET_KEY', { cascade: 'delete-environment', immutableOverride: true }],
        ['prod', 'PLAIN', { cascade: 'delete-environment' }],
        ['dev', 'DEV_PINNED', { cascade: 'delete-project', immutableOverride: true }],
      ], 'the override is on record for each protected key');
    });

    t.test('names: astral characters are kept, lone surrogates refused before anything is stored', async (t) => {
      const p = await create({ projectName: 'Keys \u{1F511} vault' });
      t.equal(p.name, 'Keys \u{1F511} vault', 'a surrogate pair is one character, stored unchanged');
      t.equal(p.slug, 'keys-vault');
      const renamed = await api(svc, 'PATCH', project(p.id), as, { name: 'Lock \u{1F512}' });
      t.equal(renamed.body.project?.name, 'Lock \u{1F512}');
      t.equal((await api(svc, 'GET', project(p.id), as)).body.project.name, 'Lock \u{1F512}');
      const before = await rows(svc);
      for (const bad of ['lone \ud800 high', 'lone \udc00 low', 'end\ud83d', '\udd11start', 'reversed \udd11\ud83d']) {
        const made = await api(svc, 'POST', projects, as, { projectName: bad });
        isError(t, made, 422, 'ValidationFailure', /1 to 64 characters, without control characters or lone surrogates/);
        isError(t, await api(svc, 'PATCH', project(p.id), as, { name: bad }), 422, 'ValidationFailure', /1 to 64 characters, without control characters or lone surrogates/);
        isError(t, await api(svc, 'POST', envs(p.id), as, { name: bad, slug: 'x' }), 422, 'ValidationFailure');
      }
      t.same(await rows(svc), before, 'nothing stored, renamed or audited');
      t.equal((await api(svc, 'GET', project(p.id), as)).body.project.name, 'Lock \u{1F512}');
    });

    t.test('permission boundaries for every operation', async (t) => {
      const P = await create({ projectName: 'guarded' });
      const Q = await create({ projectName: 'elsewhere' });
      const envOf = (p: any) => p.environments.find((e: any) => e.slug === 'staging').id;
      const pAdmin = await machine(svc, 'guarded-admin', [[P.id, 'admin']]);
      const member = { token: (await machine(svc, 'guarded-member', [[P.id, 'member']])).token, reads: true };
      const viewer = { token: (await machine(svc, 'guarded-viewer', [[P.id, 'viewer']])).token, reads: true };
      const callers: Record<string, { token: string; reads?: boolean; stranger?: boolean }> = {
        'an identity with the member role': member,
        'an identity with the viewer role': viewer,
        'an identity with the no-access role': await machine(svc, 'guarded-none', [[P.id, 'no-access']]),
        'an identity without membership': { ...(await machine(svc, 'guarded-stranger')), stranger: true },
        'a person without membership': { ...(await plainUser(svc, 'stranger@example.test')), stranger: true },
      };
      const ops = (p: string, e: string): Array<[string, Method, string, unknown?]> => [
        ['get the project', 'GET', project(p)],
        ['rename the project', 'PATCH', project(p), { name: 'taken over' }],
        ['change the slug', 'PATCH', project(p), { slug: 'taken-over' }],
        ['delete the project', 'DELETE', `${project(p)}?force=true`],
        ['create an environment', 'POST', envs(p), { name: 'Intruder', slug: 'intruder' }],
        ['rename an environment', 'PATCH', env(p, e), { name: 'Intruder' }],
        ['delete an environment', 'DELETE', `${env(p, e)}?force=true`],
      ];
      const before = await rows(svc);
      for (const [name, method, path, body] of ops(P.id, envOf(P))) {
        for (const [who, caller] of Object.entries(callers)) {
          if (method === 'GET' && caller.reads) {
            t.test(`${name}: ${who} may`, async (t) => t.equal((await api(svc, method, path, caller.token, body)).status, 200));
            continue;
          }
          // Not a member: as a missing project (404); a member without the right: 403.
          t.test(`${name}: ${who}`, async (t) =>
            caller.stranger
              ? isError(t, await api(svc, method, path, caller.token, body), 404, 'NotFound', `Project with ID '${P.id}' not found`)
              : isError(t, await api(svc, method, path, caller.token, body), 403, 'PermissionDenied', 'You are not allowed to access this resource'));
        }
        t.test(`${name}: no token`, async (t) => isError(t, await api(svc, method, path, undefined, body), 401, 'UnauthorizedError'));
      }
      for (const [name, method, path, body] of ops(Q.id, envOf(Q))) {
        t.test(`${name}: an admin of project A in project B`, async (t) =>
          isError(t, await api(svc, method, path, pAdmin.token, body), 404, 'NotFound', `Project with ID '${Q.id}' not found`));
        t.test(`${name}: project B's environment through project A`, async (t) => {
          const crossed = path.replace(Q.id, P.id);
          if (crossed.includes('/environments/')) {
            isError(t, await api(svc, method, crossed, pAdmin.token, body), 404, 'NotFound', /Environment with ID/);
          } else t.pass('not an environment route');
        });
      }
      for (const id of [MISSING, 'not-a-uuid', "x' or 1=1 --", MISSING.toUpperCase()]) {
        for (const [name, method, path, body] of ops(encodeURIComponent(id), envOf(P))) {
          t.test(`${name}: unknown project ${id} is a 404 before any 403`, async (t) =>
            isError(t, await api(svc, method, path, callers['an identity without membership']!.token, body), 404, 'NotFound', /Project with ID/));
        }
      }
      t.test('nothing changed', async (t) => t.same(await rows(svc), before));

      t.test('a project admin identity manages its project', async (t) => {
        const e = await api(svc, 'POST', envs(P.id), pAdmin.token, { name: 'Ops', slug: 'ops' });
        t.equal(e.status, 200);
        t.equal((await api(svc, 'PATCH', env(P.id, e.body.environment.id), pAdmin.token, { slug: 'operations' })).status, 200);
        t.equal((await api(svc, 'DELETE', env(P.id, e.body.environment.id), pAdmin.token)).status, 200);
        t.equal((await api(svc, 'PATCH', project(P.id), pAdmin.token, { name: 'Guarded too' })).body.project?.name, 'Guarded too');
        const audit = await auditOf(svc, P.id, 'update-environment');
        t.same(audit.map((a) => [a.actorType, a.actorId]), [['identity', pAdmin.identityId]], 'audited as the identity');
        t.equal((await api(svc, 'DELETE', project(P.id), pAdmin.token)).status, 200);
        isError(t, await api(svc, 'GET', project(P.id), pAdmin.token), 404, 'NotFound', `Project with ID '${P.id}' not found`);
        t.equal((await footprint(svc, P.id)).memberships, 0, 'its memberships went with it');
      });
    });

    t.test('racing changes to the same slug: one wins, the others are told it is taken', async (t) => {
      const created = await Promise.all([1, 2, 3, 4].map((i) => api(svc, 'POST', projects, as, { projectName: `race ${i}`, slug: 'race' })));
      t.same(created.map((r) => r.status).sort(), [200, 400, 400, 400], JSON.stringify(created.map((r) => r.body)));
      for (const r of created.filter((r) => r.status !== 200)) isError(t, r, 400, 'BadRequest', "A project with slug 'race' already exists");

      const [a, b] = await Promise.all([create({ projectName: 'race-a' }), create({ projectName: 'race-b' })]);
      const moved = await Promise.all([a, b].map((p) => api(svc, 'PATCH', project(p.id), as, { slug: 'race-target' })));
      t.same(moved.map((r) => r.status).sort(), [200, 400], JSON.stringify(moved.map((r) => r.body)));

      const added = await Promise.all([1, 2, 3].map(() => api(svc, 'POST', envs(a.id), as, { name: 'Same', slug: 'same' })));
      t.same(added.map((r) => r.status).sort(), [200, 400, 400], JSON.stringify(added.map((r) => r.body)));
      const e = added.find((r) => r.status === 200)!.body.environment;
      const renamed = await Promise.all(['x', 'y'].map(() => api(svc, 'PATCH', env(a.id, e.id), as, { slug: 'dev2' })));
      t.same(renamed.map((r) => r.status), [200, 200], 'the same change twice is fine');
      t.same((await api(svc, 'GET', project(a.id), as)).body.project.environments.map((x: any) => x.slug), ['dev', 'staging', 'prod', 'dev2']);
    });

    t.test('bad input: a 4xx JSON answer, nothing changed', async (t) => {
      const p = await create({ projectName: 'strict' });
      const Q = await create({ projectName: 'strict-other' });
      const e = p.environments[0].id;
      await secret(svc, p.id, 'dev', 'KEEP');
      const long = 'x'.repeat(10_000);
      const before = await rows(svc);
      const cases: Array<[string, Method, string, unknown, number]> = [
        ['no projectName', 'POST', projects, {}, 422],
        ['projectName of the wrong type', 'POST', projects, { projectName: 42 }, 422],
        ['projectName null', 'POST', projects, { projectName: null }, 422],
        ['projectName an array', 'POST', projects, { projectName: ['a'] }, 422],
        ['blank projectName', 'POST', projects, { projectName: '   ' }, 422],
        ['oversized projectName', 'POST', projects, { projectName: long }, 422],
        ['projectName of 65 characters', 'POST', projects, { projectName: 'n'.repeat(65) }, 422],
        ['projectName with a NUL', 'POST', projects, { projectName: 'nul\u0000name' }, 422],
        ['projectName with a newline', 'POST', projects, { projectName: 'two\nlines' }, 422],
        ['projectName with a lone surrogate', 'POST', projects, { projectName: 'half \ud800' }, 422],
        ['projectName with nothing to derive a slug from', 'POST', projects, { projectName: '!!!' }, 422],
        ['upper-case slug', 'POST', projects, { projectName: 'x', slug: 'Bad' }, 422],
        ['slug with a space', 'POST', projects, { projectName: 'x', slug: 'bad slug' }, 422],
        ['slug with a leading hyphen', 'POST', projects, { projectName: 'x', slug: '-bad' }, 422],
        ['slug with a double hyphen', 'POST', projects, { projectName: 'x', slug: 'a--b' }, 422],
        ['slug with a path', 'POST', projects, { projectName: 'x', slug: '../x' }, 422],
        ['slug with a NUL', 'POST', projects, { projectName: 'x', slug: 'a\u0000b' }, 422],
        ['slug of 65 characters', 'POST', projects, { projectName: 'x', slug: 's'.repeat(65) }, 422],
        ['oversized slug', 'POST', projects, { projectName: 'x', slug: long }, 422],
        ['slug of the wrong type', 'POST', projects, { projectName: 'x', slug: 7 }, 422],
        ['duplicate slug', 'POST', projects, { projectName: 'x', slug: 'strict' }, 400],
        ['an array body', 'POST', projects, ['strict'], 422],
        ['a string body', 'POST', projects, 'strict', 422],
        ['a null body', 'POST', projects, null, 422],
        ['a number body', 'POST', projects, 5, 422],

        ['rename to blank', 'PATCH', project(p.id), { name: '' }, 422],
        ['rename to a number', 'PATCH', project(p.id), { name: 1 }, 422],
        ['rename with a NUL', 'PATCH', project(p.id), { name: 'a\u0000' }, 422],
        ['rename with a lone surrogate', 'PATCH', project(p.id), { name: 'half \udfff' }, 422],
        ['rename oversized', 'PATCH', project(p.id), { name: long }, 422],
        ['re-slug upper-case', 'PATCH', project(p.id), { slug: 'UPPER' }, 422],
        ['re-slug to a path', 'PATCH', project(p.id), { slug: '../strict-other' }, 422],
        ['re-slug to blank', 'PATCH', project(p.id), { slug: '' }, 422],
        ['re-slug to null', 'PATCH', project(p.id), { slug: null }, 422],
        ['re-slug to a taken slug', 'PATCH', project(p.id), { slug: 'strict-other' }, 400],
        ['change with an array body', 'PATCH', project(p.id), [{ name: 'x' }], 422],
        ['change with a string body', 'PATCH', project(p.id), 'x', 422],
        ['delete with force=yes', 'DELETE', `${project(p.id)}?force=yes`, undefined, 422],
        ['delete with force=1', 'DELETE', `${project(p.id)}?force=1`, undefined, 422],
        ['delete with overrideImmutable=yes', 'DELETE', `${project(p.id)}?force=true&overrideImmutable=yes`, undefined, 422],

        ['environment without a slug', 'POST', envs(p.id), { name: 'x' }, 422],
        ['environment without a name', 'POST', envs(p.id), { slug: 'x' }, 422],
        ['environment with a blank name', 'POST', envs(p.id), { name: ' ', slug: 'x' }, 422],
        ['environment name with a NUL', 'POST', envs(p.id), { name: 'a\u0000', slug: 'x' }, 422],
        ['environment name of 65 characters', 'POST', envs(p.id), { name: 'n'.repeat(65), slug: 'x' }, 422],
        ['oversized environment name', 'POST', envs(p.id), { name: long, slug: 'x' }, 422],
        ['environment slug upper-case', 'POST', envs(p.id), { name: 'x', slug: 'PROD' }, 422],
        ['environment slug with a path', 'POST', envs(p.id), { name: 'x', slug: '../prod' }, 422],
        ['environment slug of the wrong type', 'POST', envs(p.id), { name: 'x', slug: true }, 422],
        ['environment slug of 65 characters', 'POST', envs(p.id), { name: 'x', slug: 's'.repeat(65) }, 422],
        ['duplicate environment slug', 'POST', envs(p.id), { name: 'x', slug: 'prod' }, 400],
        ['environment array body', 'POST', envs(p.id), [{ name: 'x', slug: 'x' }], 422],
        ['environment rename to blank', 'PATCH', env(p.id, e), { name: '' }, 422],
        ['environment re-slug upper-case', 'PATCH', env(p.id, e), { slug: 'DEV' }, 422],
        ['environment re-slug to a number', 'PATCH', env(p.id, e), { slug: 5 }, 422],
        ['environment re-slug to a taken slug', 'PATCH', env(p.id, e), { slug: 'prod' }, 400],
        ['unknown environment', 'PATCH', env(p.id, MISSING), { name: 'x' }, 404],
        ['malformed environment id', 'PATCH', env(p.id, 'dev'), { name: 'x' }, 404],
        ["another project's environment", 'PATCH', env(p.id, Q.environments[0].id), { name: 'x' }, 404],
        ["delete another project's environment", 'DELETE', `${env(p.id, Q.environments[0].id)}?force=true`, undefined, 404],
        ['delete an unknown environment', 'DELETE', env(p.id, MISSING), undefined, 404],
        ['delete an environment with force=on', 'DELETE', `${env(p.id, e)}?force=on`, undefined, 422],
        ['delete an environment holding a secret', 'DELETE', env(p.id, e), undefined, 409],
        ['delete the project holding a secret', 'DELETE', project(p.id), undefined, 409],
      ];
      for (const [name, method, path, body, status] of cases) {
        t.test(name, async (t) => isError(t, await api(svc, method, path, as, body), status));
      }
      t.test('malformed JSON and other media types', async (t) => {
        for (const [method, path] of [['POST', projects], ['PATCH', project(p.id)], ['POST', envs(p.id)], ['PATCH', env(p.id, e)]] as const) {
          const url = `${svc.url}${path}`;
          isError(t, await request(url, { method, token: as, headers: { 'content-type': 'application/json' }, body: '{"projectName":' }), 400, 'BadRequest', 'Malformed JSON body');
          isError(t, await request(url, { method, token: as, headers: { 'content-type': 'text/plain' }, body: 'name' }), 415);
        }
      });
      t.test('a body over the cap', async (t) => {
        isError(t, await api(svc, 'POST', projects, as, { projectName: 'x'.repeat(2 * 1024 * 1024) }), 413, 'PayloadTooLarge');
      });
      t.test('lookups by a slug that can never exist', async (t) => {
        for (const slug of ['%2E%2Ex', '%F0%9F%94%91']) {
          isError(t, await api(svc, 'GET', `${projects}/slug/${slug}`, as), 404, 'NotFound');
        }
        // Beyond the limits of every project ref: refused before the lookup, not echoed.
        for (const slug of ['a%00b', 'x'.repeat(300)]) {
          isError(t, await api(svc, 'GET', `${projects}/slug/${slug}`, as), 422, 'ValidationFailure');
        }
      });
      t.test('nothing changed', async (t) => t.same(await rows(svc), before));
      t.test('form bodies work', async (t) => {
        const r = await request(`${svc.url}${projects}`, {
          method: 'POST', token: as, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'projectName=From+a+form',
        });
        t.equal(r.status, 200);
        t.equal(r.body.project?.slug, 'from-a-form');
      });
    });
  });
}
