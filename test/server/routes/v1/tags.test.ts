// Project tags over HTTP at Infisical's paths, and secrets carrying them: tagIds on
// create, update and batch; tags in read answers (lists, single reads, imports); the
// tagSlugs filter on v3 and v4; a tag renamed or deleted seen by another replica at once.
import t from 'tap';
import { startService } from '../../../../server/app.js';
import { parseConfig } from '../../../../server/config.js';
import { SYSTEM } from '../../../../server/domain/access.js';
import { request, type JsonResponse } from '../../../helpers/http.js';
import { INVENTORY, login, quietLog, seedHomelab, startTestService, testEnv } from '../../../helpers/service.js';

t.test('tags', async (t) => {
  const env = await testEnv(t, 'postgres+redis');
  const svc = await startTestService(t, env);
  const B = await startService(parseConfig(env), quietLog);
  t.teardown(() => B.close());
  const urlB = `http://127.0.0.1:${B.port}`;
  const seeded = await seedHomelab(svc.services, { role: 'admin' });
  const token = await login(svc.url, seeded);
  const pid = seeded.projectId;
  const sql = svc.services.store.sql;
  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, json?: unknown, base = svc.url) => request(`${base}${path}`, { method, token, json });
  const mustBe = (res: JsonResponse, status: number, what: string) => {
    if (res.status !== status) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const count = async (table: string) => Number((await sql.unsafe(`select count(*)::text as n from ${table}`))[0]!.n);
  const tagsOf = (body: any) => Object.fromEntries(body.secrets.filter((s: any) => s.tags.length > 0).map((s: any) => [s.secretKey, s.tags.map((x: any) => x.slug)]));
  const listV3 = (extra = '', base = svc.url) => call('GET', `/api/v3/secrets/raw?workspaceId=${pid}&environment=prod&secretPath=%2F${extra}`, undefined, base);
  const listV4 = (extra = '') => call('GET', `/api/v4/secrets?projectId=${pid}&environment=prod&secretPath=%2F${extra}`);

  let db = '';
  let web = '';
  await t.test('create, list, get by id and slug, at both paths', async (t) => {
    const created = mustBe(await call('POST', `/api/v1/workspace/${pid}/tags`, { slug: 'db', color: '#ff0000' }), 200, 'create');
    t.match(created.tag, { slug: 'db', name: 'db', color: '#ff0000', projectId: pid });
    db = created.tag.id;
    web = mustBe(await call('POST', `/api/v1/projects/${pid}/tags`, { slug: 'web' }), 200, 'create 2').tag.id;
    const listed = mustBe(await call('GET', `/api/v1/projects/${pid}/tags`), 200, 'list');
    t.same(listed.tags.map((x: any) => [x.slug, x.color]), [['db', '#ff0000'], ['web', null]]);
    t.equal(mustBe(await call('GET', `/api/v1/workspace/${pid}/tags/${db}`), 200, 'by id').tag.slug, 'db');
    t.equal(mustBe(await call('GET', `/api/v1/projects/${pid}/tags/slug/web`), 200, 'by slug').tag.id, web);
    t.equal((await call('GET', `/api/v1/projects/${pid}/tags/slug/nope`)).status, 404);
    t.equal((await call('GET', `/api/v1/projects/${pid}/tags/not-an-id`)).status, 404);
  });

  await t.test('a name apart from the slug (Terraform\'s infisical_project_tag)', async (t) => {
    // A project of its own: the other cases count this one's tags and audit entries.
    const pid = (await svc.services.projects.create(SYSTEM, { name: 'named-tags' })).id;
    await svc.services.memberships.upsertIdentity(SYSTEM, { project: { id: pid }, identityId: seeded.identityId, role: 'admin' });
    const made = mustBe(await call('POST', `/api/v1/workspace/${pid}/tags`, { name: 'Team A', slug: 'team-a', color: '#00ff00', projectId: pid }), 200, 'create with a name');
    t.match(made.workspaceTag, { slug: 'team-a', name: 'Team A' });
    const id = made.tag.id as string;
    t.equal(mustBe(await call('GET', `/api/v1/projects/${pid}/tags/slug/team-a`), 200, 'by slug').tag.name, 'Team A', 'stored');
    const renamed = mustBe(await call('PATCH', `/api/v1/workspace/${pid}/tags/${id}`, { slug: 'team-b', projectId: pid, tagId: id }), 200, 'new slug only');
    t.match(renamed.tag, { slug: 'team-b', name: 'Team A' }, 'a given name stays when the slug changes');
    const named = mustBe(await call('PATCH', `/api/v1/workspace/${pid}/tags/${id}`, { name: '  Team B  ' }), 200, 'new name only');
    t.match(named.tag, { slug: 'team-b', name: 'Team B' }, 'the name, trimmed');
    // A tag made without a name is named by its slug, and stays so when only the slug changes.
    const plain = mustBe(await call('POST', `/api/v1/projects/${pid}/tags`, { slug: 'plain' }), 200, 'no name').tag;
    t.equal(plain.name, 'plain');
    t.match(mustBe(await call('PATCH', `/api/v1/projects/${pid}/tags/${plain.id}`, { slug: 'plain-2' }), 200, 'slug').tag, { slug: 'plain-2', name: 'plain-2' });
    for (const [body, what] of [[{ name: 'x'.repeat(65) }, 'too long'], [{ name: 'a\u0000b' }, 'control character'], [{ name: 7 }, 'not a string']] as const) {
      const r = await call('PATCH', `/api/v1/projects/${pid}/tags/${id}`, body);
      t.equal(r.status, 422, `name ${what}: 422`);
      t.match(r.body.message, /name/, 'naming it');
    }
    t.equal(mustBe(await call('GET', `/api/v1/projects/${pid}/tags/${id}`), 200, 'unchanged').tag.name, 'Team B', 'nothing written');
    const audit = await sql<{ metadata: Record<string, string> }[]>`select metadata from audit_log where event_type = 'update-tag' and metadata->>'tagId' = ${id} order by id desc limit 1`;
    t.match(audit[0]?.metadata, { tagId: id, slug: 'team-b', name: 'Team B', oldName: 'Team A' }, 'the audit entry names the change');
    for (const x of [id, plain.id]) mustBe(await call('DELETE', `/api/v1/projects/${pid}/tags/${x}`), 200, 'cleanup');
  });

  await t.test('bad input: 4xx, nothing written', async (t) => {
    const before = await count('secret_tags');
    for (const [body, status] of [
      [{ slug: 'db' }, 400],
      [{ slug: 'Has Space' }, 422],
      [{ slug: '' }, 422],
      [{ slug: 'x'.repeat(65) }, 422],
      [{ slug: 'ok', color: 'x'.repeat(33) }, 422],
      [{ slug: 'ok', extra: 1 }, 422],
      [{}, 422],
    ] as const) {
      t.equal((await call('POST', `/api/v1/projects/${pid}/tags`, body)).status, status, JSON.stringify(body));
    }
    t.equal((await call('POST', `/api/v1/projects/00000000-0000-4000-8000-000000000000/tags`, { slug: 'ok' })).status, 404, 'unknown project');
    t.equal((await call('PATCH', `/api/v1/projects/${pid}/tags/${db}`, {})).status, 422, 'nothing to change');
    t.equal((await call('PATCH', `/api/v1/projects/${pid}/tags/${db}`, { slug: 'web' })).status, 400, 'a taken slug');
    t.equal(await count('secret_tags'), before, 'nothing written');
  });

  await t.test('secrets carry tags: create, update, batch; unknown tag ids refused', async (t) => {
    const made = mustBe(await call('POST', '/api/v3/secrets/raw/DB_URL', { workspaceId: pid, environment: 'prod', secretValue: 'postgres://x', tagIds: [db, web] }), 200, 'create');
    t.same(made.secret.tags.map((x: any) => x.slug), ['db', 'web'], 'the answer carries them');
    mustBe(await call('POST', '/api/v4/secrets/batch', { projectId: pid, environment: 'prod', secrets: [{ secretKey: 'WEB_A', secretValue: 'a', tagIds: [web] }, { secretKey: 'PLAIN', secretValue: 'p' }] }), 200, 'batch');
    t.same(tagsOf(mustBe(await listV3(), 200, 'list')), { DB_URL: ['db', 'web'], WEB_A: ['web'] }, 'the list carries them');
    const one = mustBe(await call('GET', `/api/v3/secrets/raw/DB_URL?workspaceId=${pid}&environment=prod`), 200, 'one');
    t.same(one.secret.tags, [{ id: db, slug: 'db', name: 'db', color: '#ff0000' }, { id: web, slug: 'web', name: 'web', color: null }], 'a single read carries them');

    mustBe(await call('PATCH', '/api/v3/secrets/raw/DB_URL', { workspaceId: pid, environment: 'prod', secretValue: 'postgres://y' }), 200, 'value only');
    t.same(tagsOf(mustBe(await listV3(), 200, 'list')).DB_URL, ['db', 'web'], 'a change without tagIds keeps them');
    const replaced = mustBe(await call('PATCH', '/api/v3/secrets/raw/DB_URL', { workspaceId: pid, environment: 'prod', tagIds: [db] }), 200, 'replace');
    t.same(replaced.secret.tags.map((x: any) => x.slug), ['db'], 'tagIds replaces the set');

    const secretsBefore = await count('secrets');
    const linksBefore = await count('secret_tag_links');
    const unknown = await call('POST', '/api/v3/secrets/raw/NEW', { workspaceId: pid, environment: 'prod', secretValue: 'v', tagIds: ['00000000-0000-4000-8000-000000000000'] });
    t.equal(unknown.status, 422);
    t.match(unknown.body.message, /tagIds/);
    const batchBad = await call('POST', '/api/v4/secrets/batch', { projectId: pid, environment: 'prod', secrets: [{ secretKey: 'N1', secretValue: '1' }, { secretKey: 'N2', secretValue: '2', tagIds: ['nope'] }] });
    t.equal(batchBad.status, 422, 'one bad tag fails the whole batch');
    t.equal((await call('PATCH', '/api/v3/secrets/raw/WEB_A', { workspaceId: pid, environment: 'prod', tagIds: 'web' })).status, 422, 'tagIds not a list');
    t.equal(await count('secrets'), secretsBefore, 'no secret written');
    t.equal(await count('secret_tag_links'), linksBefore, 'no link written');
  });

  await t.test('tagSlugs filters v3 and v4 lists; an unknown slug matches none', async (t) => {
    for (const list of [listV3, listV4]) {
      t.same(mustBe(await list('&tagSlugs=web'), 200, 'web').secrets.map((s: any) => s.secretKey), ['WEB_A']);
      t.same(mustBe(await list('&tagSlugs=db,web'), 200, 'either').secrets.map((s: any) => s.secretKey).sort(), ['DB_URL', 'WEB_A']);
      t.same(mustBe(await list('&tagSlugs=nope'), 200, 'unknown').secrets, []);
      t.equal(mustBe(await list(''), 200, 'none').secrets.length, Object.keys(INVENTORY).length + 3, 'no filter: every secret');
    }
  });

  await t.test('imported secrets carry their tags, and the filter applies to them', async (t) => {
    const project = { id: pid };
    await svc.services.secrets.create(SYSTEM, { project, environment: 'staging', secretPath: '/', key: 'STAGED', value: 's', tagIds: [web] });
    await svc.services.secrets.create(SYSTEM, { project, environment: 'staging', secretPath: '/', key: 'UNTAGGED', value: 'u' });
    await svc.services.secretImports.create(SYSTEM, { project, environment: 'prod', path: '/', import: { environment: 'staging', path: '/' } });
    const body = mustBe(await listV3('&include_imports=true&tagSlugs=web'), 200, 'filtered');
    t.same(body.imports[0].secrets.map((s: any) => [s.secretKey, s.tags.map((x: any) => x.slug)]), [['STAGED', ['web']]]);
  });

  await t.test('a tag renamed or deleted: the other replica answers the change on its next read', async (t) => {
    t.same(tagsOf(mustBe(await listV3('', urlB), 200, 'B')), { DB_URL: ['db'], WEB_A: ['web'] }, 'B warmed');
    mustBe(await call('PATCH', `/api/v1/workspace/${pid}/tags/${web}`, { slug: 'frontend', color: 'blue' }), 200, 'rename');
    t.same(tagsOf(mustBe(await listV3('', urlB), 200, 'B')), { DB_URL: ['db'], WEB_A: ['frontend'] }, 'renamed on B');
    const removed = mustBe(await call('DELETE', `/api/v1/projects/${pid}/tags/${web}`), 200, 'delete');
    t.equal(removed.tag.slug, 'frontend');
    t.same(tagsOf(mustBe(await listV3('', urlB), 200, 'B')), { DB_URL: ['db'] }, 'gone on B');
    t.equal((await call('DELETE', `/api/v1/projects/${pid}/tags/${web}`)).status, 404, 'twice: 404');
    const events = await sql<{ eventType: string }[]>`select event_type from audit_log where event_type like '%-tag' and project_id = ${pid} order by id`;
    t.same(events.map((e) => e.eventType), ['create-tag', 'create-tag', 'update-tag', 'delete-tag'], 'audited');
  });

  await t.test('a viewer lists tags but cannot change them', async (t) => {
    const identity = await svc.services.identities.create(SYSTEM, { name: 'viewer' });
    const ua = await svc.services.identities.attachUniversalAuth(SYSTEM, identity.id);
    const { clientSecret } = await svc.services.identities.createClientSecret(SYSTEM, identity.id);
    await svc.services.memberships.upsertIdentity(SYSTEM, { project: { id: pid }, identityId: identity.id, role: 'viewer' });
    const viewer = await login(svc.url, { clientId: ua.clientId, clientSecret });
    t.equal((await request(`${svc.url}/api/v1/projects/${pid}/tags`, { token: viewer })).status, 200);
    t.equal((await request(`${svc.url}/api/v1/projects/${pid}/tags`, { method: 'POST', token: viewer, json: { slug: 'mine' } })).status, 403);
  });
});
