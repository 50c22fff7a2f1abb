// A secret's history over HTTP: GET /api/v1/secret/:secretId/secret-versions lists every
// version newest first, opened (values and comments as written, names as they were);
// POST …/secret-versions/:version/restore makes a NEW version equal to the chosen one,
// which is what the operator reads next. History is never rewritten.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { ESO_LIST_QUERY, request } from '../../helpers/http.js';
import { BACKENDS, seedHomelab, startTestService, testEnv, type TestService } from '../../helpers/service.js';
import { api, isError, machine, snapshot, superadmin, type Method } from './helpers.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const VERSION_FIELDS = [
  '_id', 'actor', 'createdAt', 'environment', 'id', 'secret', 'secretComment', 'secretId', 'secretKey', 'secretPath',
  'secretValue', 'type', 'version', 'workspace',
];
const SECRET_FIELDS = [
  '_id', 'createdAt', 'environment', 'id', 'secretComment', 'secretKey', 'secretMetadata', 'secretPath',
  'secretValue', 'secretValueHidden', 'skipMultilineEncoding', 'tags', 'type', 'updatedAt', 'version', 'workspace',
];

async function state(svc: TestService) {
  const sql = svc.services.store.sql;
  const [row] = await sql<Record<string, unknown>[]>`select
    (select count(*)::int from secrets) as secrets,
    (select count(*)::int from secret_versions) as versions,
    (select md5(coalesce(string_agg(id::text || ':' || key || ':' || version || ':' || md5(value_blob) || ':' ||
      coalesce(md5(comment_blob), '-'), ',' order by id), '')) from secrets) as rows,
    (select coalesce(max(id), 0)::int from audit_log) as last_audit`;
  return { ...(await snapshot(svc)), ...row };
}

for (const backend of BACKENDS) {
  t.test(`secret versions and restore (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend));
    const as = (await superadmin(svc)).token;
    const seeded = await seedHomelab(svc.services);
    const P = seeded.projectId;
    const m = await machine(svc, 'writer', [[P, 'member']]);
    const sql = svc.services.store.sql;
    const where = { workspaceId: P, environment: 'prod', secretPath: '/' };
    const one = (name: string) => `/api/v3/secrets/raw/${encodeURIComponent(name)}`;
    const write = (method: Method, name: string, body: Record<string, unknown> = {}) => api(svc, method, one(name), m.token, { ...where, ...body });
    const versions = (id: string, q = '', token = m.token) => api(svc, 'GET', `/api/v1/secret/${id}/secret-versions${q}`, token);
    const restore = (id: string, v: number | string, body?: unknown, token = m.token) =>
      api(svc, 'POST', `/api/v1/secret/${id}/secret-versions/${v}/restore`, token, body);
    const eso = async (key: string) =>
      (await request(`${svc.url}/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { token: m.token })).body.secrets.find((s: any) => s.secretKey === key);
    const tok = () => randomBytes(6).toString('hex');

    // History of HISTORY: v1 created, v2 new value, v3 new comment, v4 renamed, v5 new value.
    const h = [
      { key: 'HISTORY', value: `one, "quoted"\n${tok()}`, comment: 'first comment' },
      { key: 'HISTORY', value: `two 🔐 ${tok()}`, comment: 'first comment' },
      { key: 'HISTORY', value: '', comment: '' },
      { key: 'HISTORY_RENAMED', value: '', comment: '' },
      { key: 'HISTORY_RENAMED', value: '${GATEWAY_TOKEN}', comment: '' },
    ];
    h[2]!.value = h[1]!.value;
    h[2]!.comment = `second comment ${tok()}`;
    h[3]!.value = h[2]!.value;
    h[3]!.comment = h[2]!.comment;
    h[4]!.comment = h[3]!.comment;
    const made = await write('POST', 'HISTORY', { secretValue: h[0]!.value, secretComment: h[0]!.comment });
    const id: string = made.body.secret.id;
    await write('PATCH', 'HISTORY', { secretValue: h[1]!.value });
    await write('PATCH', 'HISTORY', { secretComment: h[2]!.comment });
    await write('PATCH', 'HISTORY', { newSecretName: 'HISTORY_RENAMED' });
    await write('PATCH', 'HISTORY_RENAMED', { secretValue: h[4]!.value });

    t.test('the list: newest first, opened, with the exact shape', async (t) => {
      const r = await versions(id);
      t.equal(r.status, 200, JSON.stringify(r.body));
      t.same(Object.keys(r.body), ['secretVersions']);
      const vs = r.body.secretVersions;
      t.same(vs.map((v: any) => v.version), [5, 4, 3, 2, 1]);
      for (const v of vs) {
        t.same(Object.keys(v).sort(), VERSION_FIELDS);
        t.match(v, {
          id: UUID, secretId: id, secret: id, workspace: P, environment: 'prod', secretPath: '/', type: 'shared',
          actor: { type: 'identity', id: m.identityId }, createdAt: ISO,
        });
        t.equal(v._id, v.id);
        const want = h[v.version - 1]!;
        t.same([v.secretKey, v.secretValue, v.secretComment], [want.key, want.value, want.comment], `version ${v.version} opened as written`);
      }
      t.equal(new Set(vs.map((v: any) => v.id)).size, 5, 'one id per version');
      t.equal(vs[4].actor.type, 'identity');

      t.same((await versions(id, '?limit=2')).body.secretVersions.map((v: any) => v.version), [5, 4]);
      t.same((await versions(id, '?offset=2&limit=2')).body.secretVersions.map((v: any) => v.version), [3, 2]);
      t.same((await versions(id, '?offset=4')).body.secretVersions.map((v: any) => v.version), [1]);
      t.same((await versions(id, '?offset=5')).body.secretVersions, []);
      t.same((await versions(id, '?offset=&limit=&unknown=1')).body.secretVersions.length, 5, 'empty values are absent; unknown ones ignored');
      t.equal((await versions(id.toUpperCase())).status, 200, 'an upper-case id names the same secret');
      const seededRow = (await sql`select id from secrets where key = 'GATEWAY_TOKEN'`)[0]!;
      t.match((await versions(seededRow.id)).body.secretVersions, [{ version: 1, actor: { type: 'system', id: null }, secretKey: 'GATEWAY_TOKEN' }]);
      const old = await api(svc, 'GET', `${one('HISTORY_RENAMED')}?workspaceId=${P}&environment=prod&version=2`, m.token);
      t.same([old.body.secret.version, old.body.secret.secretValue, old.body.secret.secretKey], [2, h[1]!.value, 'HISTORY'], 'a read of an old version agrees');
    });

    t.test('restore makes a new version equal to the old one, and ESO reads it next', async (t) => {
      t.equal((await eso('HISTORY_RENAMED'))?.secretValue, h[4]!.value.replace('${GATEWAY_TOKEN}', 'e'.repeat(64)), 'ESO reads the current, expanded');
      const r = await restore(id, 2);
      t.equal(r.status, 200, JSON.stringify(r.body));
      t.same(Object.keys(r.body), ['secret']);
      t.same(Object.keys(r.body.secret).sort(), SECRET_FIELDS);
      t.match(r.body.secret, { id, _id: id, workspace: P, environment: 'prod', secretPath: '/', type: 'shared', createdAt: ISO, updatedAt: ISO });
      t.same([r.body.secret.version, r.body.secret.secretKey, r.body.secret.secretValue, r.body.secret.secretComment], [6, 'HISTORY', h[1]!.value, h[1]!.comment]);
      const read = await eso('HISTORY');
      t.same([read?.secretValue, read?.version, read?.secretComment], [h[1]!.value, 6, h[1]!.comment], 'the very next ESO read has the restored value');
      t.notOk(await eso('HISTORY_RENAMED'), 'the name it was restored from is gone');
      t.same((await api(svc, 'GET', `${one('HISTORY')}?workspaceId=${P}&environment=prod`, m.token)).body.secret, r.body.secret);
      const vs = (await versions(id)).body.secretVersions;
      t.same(vs.map((v: any) => v.version), [6, 5, 4, 3, 2, 1], 'history kept, one more version');
      t.same([vs[0].secretKey, vs[0].secretValue, vs[0].secretComment], ['HISTORY', h[1]!.value, h[1]!.comment]);
      t.same([vs[1].secretValue, vs[5].secretValue], [h[4]!.value, h[0]!.value], 'older versions untouched');

      const again = await restore(id, 1, {});
      t.same([again.body.secret.version, again.body.secret.secretValue, again.body.secret.secretComment], [7, h[0]!.value, h[0]!.comment]);
      t.equal((await eso('HISTORY'))?.secretValue, h[0]!.value);
      const same = await restore(id, 7);
      t.same([same.body.secret.version, same.body.secret.secretValue], [7, h[0]!.value], 'restoring the current version changes nothing: no new version');
      const fromRestored = await restore(id, 6);
      t.same([fromRestored.body.secret.version, fromRestored.body.secret.secretValue], [8, h[1]!.value], 'a restored version can itself be restored');

      const audit = await sql`select event_type, secret_key, secret_version, metadata from audit_log where event_type = 'restore-secret-version' and project_id = ${P} order by id`;
      t.same(audit.map((a) => [a.secretKey, a.secretVersion, a.metadata]), [
        ['HISTORY', 6, { restoredFrom: 2, renamedFrom: 'HISTORY_RENAMED' }],
        ['HISTORY', 7, { restoredFrom: 1 }],
        ['HISTORY', 8, { restoredFrom: 6 }],
      ]);
      const text = (await sql<{ t: string }[]>`select audit_log::text as t from audit_log`).map((x) => x.t).join('\n');
      for (const v of h) if (v.value.length > 6 && text.includes(v.value.slice(-12))) t.fail('a value is in the audit trail');
      t.pass('no value in the audit trail');
    });

    t.test('restoring a name that another secret took meanwhile: 400, nothing changed', async (t) => {
      const a = await write('POST', 'SWAP_A', { secretValue: 'a1' });
      await write('PATCH', 'SWAP_A', { newSecretName: 'SWAP_B' });
      await write('POST', 'SWAP_A', { secretValue: 'another secret' });
      const before = await state(svc);
      isError(t, await restore(a.body.secret.id, 1), 400, 'BadRequest', 'Secret already exists');
      t.same(await state(svc), before);
      const own = await restore(a.body.secret.id, 2);
      t.same([own.status, own.body.secret.version], [200, 2], 'its own current name is fine (the current version: nothing to write)');
    });

    t.test('batch-created secrets have a restorable first version', async (t) => {
      const b = await api(svc, 'POST', '/api/v3/secrets/batch/raw', m.token, { ...where, secrets: [{ secretKey: 'BATCHED', secretValue: 'b1', secretComment: 'bc' }] });
      const bid = b.body.secrets[0].id;
      await write('PATCH', 'BATCHED', { secretValue: 'b2', secretComment: '' });
      t.match((await versions(bid)).body.secretVersions, [{ version: 2, secretValue: 'b2' }, { version: 1, secretValue: 'b1', secretComment: 'bc' }]);
      const r = await restore(bid, 1);
      t.same([r.body.secret.version, r.body.secret.secretValue, r.body.secret.secretComment], [3, 'b1', 'bc']);
      t.equal((await eso('BATCHED'))?.secretValue, 'b1');
    });

    t.test('an immutable key needs overrideImmutable to be restored', async (t) => {
      const s = await svc.services.secrets.create(SYSTEM, { project: { id: P }, environment: 'prod', key: 'PINNED', value: 'p1', immutable: true });
      await svc.services.secrets.update(SYSTEM, { project: { id: P }, environment: 'prod', key: 'PINNED', value: 'p2', allowImmutableChange: true });
      const before = await state(svc);
      isError(t, await restore(s.id, 1), 409, 'Conflict', /must never change/);
      isError(t, await restore(s.id, 1, { overrideImmutable: false }), 409, 'Conflict');
      isError(t, await restore(s.id, 1, { overrideImmutable: 'perhaps' }), 422, 'ValidationFailure');
      isError(t, await restore(s.id, 99), 404, 'NotFound', "Secret 'PINNED' has no version 99"); // an unknown version is a 404 first
      t.same(await state(svc), before, 'nothing changed');
      t.equal((await eso('PINNED'))?.secretValue, 'p2');
      const r = await restore(s.id, 1, { overrideImmutable: true });
      t.equal(r.status, 200, JSON.stringify(r.body));
      t.same([r.body.secret.version, r.body.secret.secretValue], [3, 'p1']);
      t.equal((await eso('PINNED'))?.secretValue, 'p1');
      isError(t, await restore(s.id, 2), 409, 'Conflict', /must never change/);
      const events = await svc.services.store.sql`select event_type, secret_version, metadata from audit_log
        where secret_key = 'PINNED' order by id`;
      t.same(events.map((e) => [e.eventType, e.secretVersion, e.metadata]), [
        ['create-secret', 1, {}],
        ['update-secret', 2, { immutableOverride: true }],
        ['restore-secret-version', 3, { restoredFrom: 1, immutableOverride: true }],
      ], 'the override is on record');
    });

    t.test('a deleted secret has no history left to read or restore', async (t) => {
      const d = await write('POST', 'DOOMED', { secretValue: 'd1' });
      await write('PATCH', 'DOOMED', { secretValue: 'd2' });
      t.equal((await write('DELETE', 'DOOMED')).status, 200);
      isError(t, await versions(d.body.secret.id), 404, 'NotFound', `Secret with ID '${d.body.secret.id}' not found`);
      isError(t, await restore(d.body.secret.id, 1), 404, 'NotFound');
    });

    t.test('bad input: a 4xx JSON answer, nothing changed', async (t) => {
      const missing = '00000000-0000-4000-8000-000000000000';
      const before = await state(svc);
      const cases: Array<[string, Method, string, unknown, number, string?]> = [
        ['list: unknown secret', 'GET', `/api/v1/secret/${missing}/secret-versions`, undefined, 404, 'NotFound'],
        ['list: malformed id', 'GET', '/api/v1/secret/not-a-uuid/secret-versions', undefined, 404, 'NotFound'],
        ['list: injection in the id', 'GET', `/api/v1/secret/${encodeURIComponent("x' or 1=1 --")}/secret-versions`, undefined, 404, 'NotFound'],
        ['list: a NUL in the id', 'GET', '/api/v1/secret/%00/secret-versions', undefined, 404, 'NotFound'],
        ['list: a project id as secret id', 'GET', `/api/v1/secret/${P}/secret-versions`, undefined, 404, 'NotFound'],
        ['list: offset -1', 'GET', `/api/v1/secret/${id}/secret-versions?offset=-1`, undefined, 422, 'ValidationFailure'],
        ['list: offset abc', 'GET', `/api/v1/secret/${id}/secret-versions?offset=abc`, undefined, 422, 'ValidationFailure'],
        ['list: limit 0', 'GET', `/api/v1/secret/${id}/secret-versions?limit=0`, undefined, 422, 'ValidationFailure'],
        ['list: limit 101', 'GET', `/api/v1/secret/${id}/secret-versions?limit=101`, undefined, 422, 'ValidationFailure'],
        ['list: limit 1.5', 'GET', `/api/v1/secret/${id}/secret-versions?limit=1.5`, undefined, 422, 'ValidationFailure'],
        ['list: offset huge', 'GET', `/api/v1/secret/${id}/secret-versions?offset=99999999999999`, undefined, 422, 'ValidationFailure'],
        ['restore: version 0', 'POST', `/api/v1/secret/${id}/secret-versions/0/restore`, undefined, 422, 'ValidationFailure'],
        ['restore: version -1', 'POST', `/api/v1/secret/${id}/secret-versions/-1/restore`, undefined, 422, 'ValidationFailure'],
        ['restore: version abc', 'POST', `/api/v1/secret/${id}/secret-versions/abc/restore`, undefined, 422, 'ValidationFailure'],
        ['restore: version 1.5', 'POST', `/api/v1/secret/${id}/secret-versions/1.5/restore`, undefined, 422, 'ValidationFailure'],
        ['restore: version 1e3', 'POST', `/api/v1/secret/${id}/secret-versions/1e3/restore`, undefined, 422, 'ValidationFailure'],
        ['restore: version beyond int4', 'POST', `/api/v1/secret/${id}/secret-versions/2147483648/restore`, undefined, 422, 'ValidationFailure'],
        ['restore: version far beyond', 'POST', `/api/v1/secret/${id}/secret-versions/99999999999999999999/restore`, undefined, 422, 'ValidationFailure'],
        ['restore: unknown version', 'POST', `/api/v1/secret/${id}/secret-versions/999/restore`, undefined, 404, 'NotFound'],
        ['restore: largest version', 'POST', `/api/v1/secret/${id}/secret-versions/2147483647/restore`, undefined, 404, 'NotFound'],
        ['restore: unknown secret', 'POST', `/api/v1/secret/${missing}/secret-versions/1/restore`, undefined, 404, 'NotFound'],
        ['restore: malformed id', 'POST', '/api/v1/secret/123/secret-versions/1/restore', undefined, 404, 'NotFound'],
        ['restore: an array body', 'POST', `/api/v1/secret/${id}/secret-versions/1/restore`, [true], 422, 'ValidationFailure'],
        ['restore: a string body', 'POST', `/api/v1/secret/${id}/secret-versions/1/restore`, 'yes', 422, 'ValidationFailure'],
        ['restore: overrideImmutable a number', 'POST', `/api/v1/secret/${id}/secret-versions/1/restore`, { overrideImmutable: 1 }, 422, 'ValidationFailure'],
      ];
      for (const [name, method, path, body, status, error] of cases) {
        t.test(name, async (t) => isError(t, await api(svc, method, path, m.token, body), status, error));
      }
      t.test('malformed JSON, other media types, no token', async (t) => {
        const url = `${svc.url}/api/v1/secret/${id}/secret-versions/1/restore`;
        isError(t, await request(url, { method: 'POST', token: m.token, headers: { 'content-type': 'application/json' }, body: '{"overrideImmutable":' }), 400, 'BadRequest');
        isError(t, await request(url, { method: 'POST', token: m.token, headers: { 'content-type': 'text/plain' }, body: 'x' }), 415);
        isError(t, await request(url, { method: 'POST' }), 401, 'UnauthorizedError', 'Token missing');
        isError(t, await request(`${svc.url}/api/v1/secret/${id}/secret-versions`, {}), 401, 'UnauthorizedError');
        isError(t, await request(url, { method: 'POST', token: 'x.y.z' }), 401, 'TokenError');
      });
      t.test('nothing changed', async (t) => t.same(await state(svc), before));
      t.test('the superadmin restores too', async (t) => t.equal((await restore(id, 1, undefined, as)).status, 200));
    });
  });
}
