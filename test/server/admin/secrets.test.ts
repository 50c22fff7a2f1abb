// Secret writes over HTTP on Infisical's two generations of paths (v3 raw, v4): exact
// Infisical-shaped answers, every change a new version, names and values that must
// survive the trip unchanged, immutable keys, batches that write all or nothing, caches
// that never serve a stale value after a write, an audit trail that never holds a value,
// and bad input that is a 4xx JSON answer leaving everything as it was.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { ESO_LIST_QUERY, request } from '../../helpers/http.js';
import { BACKENDS, INVENTORY, seedHomelab, startTestService, testEnv, type TestService } from '../../helpers/service.js';
import { api, isError, machine, snapshot, superadmin, type Method } from './helpers.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SECRET_FIELDS = [
  '_id', 'createdAt', 'environment', 'id', 'secretComment', 'secretKey', 'secretMetadata', 'secretPath',
  'secretValue', 'secretValueHidden', 'skipMultilineEncoding', 'tags', 'type', 'updatedAt', 'version', 'workspace',
];
const MAX_VALUE = 256 * 1024;

/** Asserts the exact Infisical secret object: every field, every type, and the values in `want`. */
function isSecret(t: any, s: any, want: Record<string, unknown>) {
  t.same(Object.keys(s ?? {}).sort(), SECRET_FIELDS, 'exactly the Infisical fields');
  t.match(s, {
    id: UUID, workspace: UUID, environment: String, type: 'shared', secretKey: String, secretValue: String,
    secretComment: String, secretPath: String, createdAt: ISO, updatedAt: ISO,
  });
  t.equal(s?._id, s?.id, '_id = id');
  t.ok(Number.isInteger(s?.version) && s.version >= 1, 'version is a positive integer');
  t.equal(typeof s?.secretValueHidden, 'boolean');
  t.equal(typeof s?.skipMultilineEncoding, 'boolean');
  t.same(s?.tags, []);
  t.same(s?.secretMetadata, []);
  t.same(Object.fromEntries(Object.keys(want).map((k) => [k, s?.[k]])), want);
}

/** Row counts (helpers' snapshot) plus a fingerprint of every secret row and version. */
async function state(svc: TestService) {
  const sql = svc.services.store.sql;
  const [row] = await sql<Record<string, unknown>[]>`select
    (select count(*)::int from secrets) as secrets,
    (select count(*)::int from secret_versions) as versions,
    (select md5(coalesce(string_agg(id::text || ':' || key || ':' || version || ':' || md5(value_blob) || ':' ||
      coalesce(md5(comment_blob), '-') || ':' || skip_multiline_encoding || ':' || immutable, ',' order by id), '')) from secrets) as rows,
    (select coalesce(max(id), 0)::int from audit_log) as last_audit`;
  return { ...(await snapshot(svc)), ...row };
}

for (const backend of BACKENDS) {
  t.test(`secret writes (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend));
    await superadmin(svc);
    const seeded = await seedHomelab(svc.services);
    const P = seeded.projectId;
    const m = await machine(svc, 'writer', [[P, 'member']]);
    const sql = svc.services.store.sql;
    /** Every value written in this file: none may ever appear in the audit trail. */
    const written = new Set<string>();
    const tok = () => `tok${randomBytes(6).toString('hex')}`;

    const where = { workspaceId: P, environment: 'prod', secretPath: '/' };
    const one = (name: string) => `/api/v3/secrets/raw/${encodeURIComponent(name)}`;
    const v3 = (method: Method, name: string, body?: unknown, token = m.token) => api(svc, method, one(name), token, body);
    const create = (name: string, value: string, extra: Record<string, unknown> = {}, token = m.token) => {
      written.add(value);
      return v3('POST', name, { ...where, secretValue: value, ...extra }, token);
    };
    const list = (q = 'secretPath=%2F', token = m.token) => api(svc, 'GET', `/api/v3/secrets/raw?workspaceId=${P}&environment=prod&${q}`, token);
    const get = (name: string, q = '', token = m.token) => api(svc, 'GET', `${one(name)}?workspaceId=${P}&environment=prod${q}`, token);
    const eso = (token = m.token) => request(`${svc.url}/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { token });
    const valueOf = (r: any, key: string) => r.body.secrets.find((s: any) => s.secretKey === key)?.secretValue;

    t.test('v3: create, read, update, delete with the exact Infisical shapes', async (t) => {
      const value = `first ${tok()}`;
      const made = await create('APP_TOKEN', value, { secretComment: 'issued by ops', skipMultilineEncoding: true });
      t.equal(made.status, 200, JSON.stringify(made.body));
      t.same(Object.keys(made.body), ['secret']);
      const s = made.body.secret;
      isSecret(t, s, {
        workspace: P, environment: 'prod', version: 1, secretKey: 'APP_TOKEN', secretValue: value,
        secretComment: 'issued by ops', secretPath: '/', secretValueHidden: false, skipMultilineEncoding: true,
      });

      const listed = await list();
      t.equal(listed.status, 200);
      const inList = listed.body.secrets.find((x: any) => x.secretKey === 'APP_TOKEN');
      t.same(inList, s, 'the list holds exactly what the write answered');
      t.same((await get('APP_TOKEN')).body, { secret: s }, 'so does the single read');

      const v2 = `second ${tok()}`;
      written.add(v2);
      const patched = await v3('PATCH', 'APP_TOKEN', { ...where, secretValue: v2 });
      t.equal(patched.status, 200, JSON.stringify(patched.body));
      isSecret(t, patched.body.secret, {
        id: s.id, version: 2, secretKey: 'APP_TOKEN', secretValue: v2, secretComment: 'issued by ops', skipMultilineEncoding: true, createdAt: s.createdAt,
      });
      t.ok(patched.body.secret.updatedAt >= s.updatedAt, 'updatedAt moves forward');

      const commented = await v3('PATCH', 'APP_TOKEN', { ...where, secretComment: 'rotated', skipMultilineEncoding: false });
      isSecret(t, commented.body.secret, { version: 3, secretValue: v2, secretComment: 'rotated', skipMultilineEncoding: false });
      const same = await v3('PATCH', 'APP_TOKEN', { ...where });
      isSecret(t, same.body.secret, { version: 3, secretValue: v2, secretComment: 'rotated' });
      t.same(
        (await sql`select version from secret_versions where secret_id = ${s.id} order by version`).map((r) => r.version),
        [1, 2, 3],
        'every change is a new version (a change that changes nothing is none)',
      );

      const removed = await v3('DELETE', 'APP_TOKEN', { ...where });
      t.equal(removed.status, 200);
      isSecret(t, removed.body.secret, { id: s.id, version: 3, secretKey: 'APP_TOKEN', secretValue: v2, secretComment: 'rotated' });
      isError(t, await get('APP_TOKEN'), 404, 'NotFound', "Secret with name 'APP_TOKEN' not found");
      t.notOk((await list()).body.secrets.some((x: any) => x.secretKey === 'APP_TOKEN'), 'gone from the list');
      isError(t, await v3('DELETE', 'APP_TOKEN', { ...where }), 404, 'NotFound');
      isError(t, await v3('PATCH', 'APP_TOKEN', { ...where, secretValue: 'x' }), 404, 'NotFound', "Secret with name 'APP_TOKEN' not found");
      t.equal((await sql`select count(*)::int as n from secret_versions where secret_id = ${s.id}`)[0]!.n, 0, 'its versions went with it');
    });

    t.test('v3: the project by projectSlug or workspaceSlug; DELETE fields in the query; defaults', async (t) => {
      const bySlug = await v3('POST', 'BY_SLUG', { projectSlug: 'homelab', environment: 'prod', secretValue: 'slugged' });
      t.equal(bySlug.status, 200, JSON.stringify(bySlug.body));
      isSecret(t, bySlug.body.secret, { workspace: P, secretPath: '/', secretComment: '', skipMultilineEncoding: false, version: 1 });
      const byWs = await v3('PATCH', 'BY_SLUG', { workspaceSlug: 'homelab', environment: 'prod', secretValue: 'again' });
      isSecret(t, byWs.body.secret, { version: 2, secretValue: 'again' });
      const form = await request(`${svc.url}${one('BY_SLUG')}`, {
        method: 'PATCH', token: m.token, headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `workspaceId=${P}&environment=prod&secretValue=${encodeURIComponent('form & value')}`,
      });
      isSecret(t, form.body.secret, { version: 3, secretValue: 'form & value' });
      const del = await api(svc, 'DELETE', `${one('BY_SLUG')}?workspaceSlug=homelab&environment=prod&secretPath=%2F`, m.token);
      t.equal(del.status, 200, JSON.stringify(del.body));
      isSecret(t, del.body.secret, { secretKey: 'BY_SLUG', secretValue: 'form & value' });
      isError(t, await get('BY_SLUG'), 404);
      const empty = await create('EMPTY_VALUE', '');
      isSecret(t, empty.body.secret, { secretValue: '' });
      t.equal(valueOf(await list(), 'EMPTY_VALUE'), '', 'an empty value is a value');
      t.equal((await v3('DELETE', 'EMPTY_VALUE', where)).status, 200);
    });

    t.test('v4 mirrors v3 with projectId; POST /api/v4/secrets/batch is the batch route', async (t) => {
      const w4 = { projectId: P, environment: 'prod', secretPath: '/' };
      const path4 = (n: string) => `/api/v4/secrets/${encodeURIComponent(n)}`;
      const made = await api(svc, 'POST', path4('V4_KEY'), m.token, { ...w4, secretValue: 'four', secretComment: 'c4' });
      t.equal(made.status, 200, JSON.stringify(made.body));
      isSecret(t, made.body.secret, { workspace: P, secretKey: 'V4_KEY', secretValue: 'four', secretComment: 'c4', version: 1 });
      const listed = await api(svc, 'GET', `/api/v4/secrets?projectId=${P}&environment=prod&secretPath=%2F`, m.token);
      t.equal(listed.status, 200);
      t.same(Object.keys(listed.body).sort(), ['imports', 'secrets']);
      t.same(listed.body.secrets.find((s: any) => s.secretKey === 'V4_KEY'), made.body.secret);
      t.same((await api(svc, 'GET', `${path4('V4_KEY')}?projectId=${P}&environment=prod`, m.token)).body, made.body);
      t.same((await get('V4_KEY')).body, made.body, 'the same secret on v3');
      const patched = await api(svc, 'PATCH', path4('V4_KEY'), m.token, { ...w4, secretValue: 'four again', newSecretName: 'V4_RENAMED' });
      isSecret(t, patched.body.secret, { id: made.body.secret.id, secretKey: 'V4_RENAMED', secretValue: 'four again', secretComment: 'c4', version: 2 });
      isError(t, await api(svc, 'GET', `${path4('V4_KEY')}?projectId=${P}&environment=prod`, m.token), 404, 'NotFound');
      const del = await api(svc, 'DELETE', `${path4('V4_RENAMED')}?projectId=${P}&environment=prod`, m.token);
      isSecret(t, del.body.secret, { secretKey: 'V4_RENAMED', secretValue: 'four again' });
      isError(t, await api(svc, 'POST', path4('V4_NO_PROJECT'), m.token, { environment: 'prod', secretValue: 'x' }), 422, 'ValidationFailure', /projectId/);

      // uWS ranks a static segment above a parameter whatever the registration order:
      // POST /api/v4/secrets/batch is the batch, never a secret named "batch".
      const batch = await api(svc, 'POST', '/api/v4/secrets/batch', m.token, {
        ...w4, secrets: [{ secretKey: 'V4_B1', secretValue: 'b1' }, { secretKey: 'V4_B2', secretValue: 'b2', secretComment: 'two' }],
      });
      t.equal(batch.status, 200, JSON.stringify(batch.body));
      t.same(Object.keys(batch.body), ['secrets']);
      t.equal(batch.body.secrets.length, 2);
      isSecret(t, batch.body.secrets[0], { secretKey: 'V4_B1', secretValue: 'b1', version: 1, secretComment: '' });
      isSecret(t, batch.body.secrets[1], { secretKey: 'V4_B2', secretValue: 'b2', version: 1, secretComment: 'two' });
      const single = await api(svc, 'POST', '/api/v4/secrets/batch', m.token, { ...w4, secretValue: 'not a batch' });
      isError(t, single, 422, 'ValidationFailure', /secrets/);
      isError(t, await get('batch'), 404, 'NotFound', "Secret with name 'batch' not found"); // no secret named "batch" was made
      // A secret that is really named "batch" (made on v3) is read on v4 by name; PATCH and
      // DELETE of /api/v4/secrets/batch are Infisical's batch routes (they take `secrets`), so
      // such a secret is changed and deleted on v3's path, as on Infisical.
      t.equal((await create('batch', 'named batch')).status, 200);
      t.equal((await api(svc, 'GET', `/api/v4/secrets/batch?projectId=${P}&environment=prod`, m.token)).body.secret.secretValue, 'named batch');
      isError(t, await api(svc, 'PATCH', '/api/v4/secrets/batch', m.token, { ...w4, secretValue: 'patched batch' }), 422, 'ValidationFailure', /secrets/);
      isError(t, await api(svc, 'DELETE', '/api/v4/secrets/batch', m.token, w4), 422, 'ValidationFailure', /secrets/);
      t.equal((await v3('PATCH', 'batch', { ...where, secretValue: 'patched batch' })).body.secret.version, 2);
      t.equal((await v3('DELETE', 'batch', where)).body.secret.secretValue, 'patched batch');
      isError(t, await get('batch'), 404);
    });

    t.test('tricky values and comments come back byte for byte, on every read path', async (t) => {
      const tricky: Record<string, string> = {
        T_COMMA: `a,b,,c ${tok()}`,
        T_QUOTES: `he said "hi" and 'bye' ${tok()}`,
        T_NEWLINES: `line1\nline2\r\nline3\r ${tok()}\n`,
        T_UNICODE: `🔐 ключ 密钥 مفتاح é ${tok()}`,
        T_REF: '${GATEWAY_TOKEN}',
        T_REF_OTHER: '${prod.GATEWAY_TOKEN}-${NOPE_NOT_THERE}',
        T_JSON: `{"a":[1,2],"b":"\\u0000"} ${tok()}`,
        T_SPACES: `  padded and\ttabbed  ${tok()} `,
        T_PEM: `-----BEGIN KEY-----\n${randomBytes(300).toString('base64').replace(/(.{64})/g, '$1\n')}\n-----END KEY-----\n`,
        T_NUL: `nul\u0000inside ${tok()}`,
        T_BIG: `${tok()}${'x'.repeat(MAX_VALUE - 15)}`,
      };
      t.equal(tricky.T_BIG!.length, MAX_VALUE, 'the largest value accepted');
      const comments: Record<string, string> = { T_COMMA: 'comment, with "quotes"\nand a newline', T_UNICODE: 'ünïcödé 💬' };
      const single = await create('T_SINGLE', tricky.T_QUOTES!, { secretComment: comments.T_COMMA });
      isSecret(t, single.body.secret, { secretValue: tricky.T_QUOTES, secretComment: comments.T_COMMA });
      for (const v of Object.values(tricky)) written.add(v);
      const made = await api(svc, 'POST', '/api/v3/secrets/batch/raw', m.token, {
        ...where,
        secrets: Object.entries(tricky).map(([k, v]) => ({ secretKey: k, secretValue: v, ...(comments[k] ? { secretComment: comments[k] } : {}) })),
      });
      t.equal(made.status, 200, JSON.stringify(made.body).slice(0, 300));
      for (const s of made.body.secrets) isSecret(t, s, { secretValue: tricky[s.secretKey], secretComment: comments[s.secretKey] ?? '' });

      const raw = await list('secretPath=%2F&expandSecretReferences=false');
      const expanded = await eso();
      for (const [k, v] of Object.entries(tricky)) {
        t.equal(valueOf(raw, k), v, `${k}: the list returns it as written`);
        t.equal((await get(k)).body.secret.secretValue, v, `${k}: so does the single read`);
        // v4 expands references unless told not to (its default): asked not to, it returns the value as written.
        t.equal((await api(svc, 'GET', `/api/v4/secrets/${k}?projectId=${P}&environment=prod&expandSecretReferences=false`, m.token)).body.secret.secretValue, v, `${k}: and v4`);
      }
      t.equal(valueOf(raw, 'T_COMMA') && raw.body.secrets.find((s: any) => s.secretKey === 'T_COMMA').secretComment, comments.T_COMMA);
      t.equal(valueOf(expanded, 'T_REF'), INVENTORY.GATEWAY_TOKEN, 'ESO gets the reference expanded');
      t.equal(valueOf(expanded, 'T_REF_OTHER'), `${INVENTORY.GATEWAY_TOKEN}-\${NOPE_NOT_THERE}`, 'an unknown reference stays as written');
      t.equal(valueOf(expanded, 'T_UNICODE'), tricky.T_UNICODE);
      t.equal((await get('T_REF', '&expandSecretReferences=true')).body.secret.secretValue, INVENTORY.GATEWAY_TOKEN);

      const renamed = await v3('PATCH', 'T_UNICODE', { ...where, secretValue: tricky.T_NEWLINES, secretComment: comments.T_UNICODE });
      isSecret(t, renamed.body.secret, { secretValue: tricky.T_NEWLINES, secretComment: comments.T_UNICODE, version: 2 });
      t.equal(valueOf(await list(), 'T_UNICODE'), tricky.T_NEWLINES);
    });

    t.test('values the service cannot store unchanged are refused, not altered', async (t) => {
      const before = await state(svc);
      // JSON can carry a lone surrogate; sealed as UTF-8 it would come back as U+FFFD.
      isError(t, await create('LONE', 'a\ud800b'), 422, 'ValidationFailure', /secretValue/);
      isError(t, await create('LONE', 'ok', { secretComment: 'x\udc00' }), 422, 'ValidationFailure', /secretComment/);
      isError(t, await v3('PATCH', 'T_COMMA', { ...where, secretValue: '\udfff' }), 422, 'ValidationFailure');
      isError(t, await v3('PATCH', 'T_COMMA', { ...where, newSecretName: 'K\ud800' }), 422, 'ValidationFailure');
      isError(t, await api(svc, 'POST', '/api/v3/secrets/batch/raw', m.token, { ...where, secrets: [{ secretKey: 'L1', secretValue: 'ok' }, { secretKey: 'L2', secretValue: '\ud800' }] }), 422);
      isError(t, await create('TOO_BIG', 'x'.repeat(MAX_VALUE + 1)), 422, 'ValidationFailure', /too long/);
      isError(t, await create('TOO_BIG', 'x'.repeat(1024 * 1024 + 10)), 413, 'PayloadTooLarge');
      t.same(await state(svc), before, 'nothing changed');
      const pair = await create('PAIR', 'a\ud83d\udd10b');
      isSecret(t, pair.body.secret, { secretValue: 'a🔐b' });
      t.equal((await get('PAIR')).body.secret.secretValue, 'a🔐b', 'a surrogate pair is fine');
    });

    t.test('names: trimmed, non-empty, no ":" or "/"', async (t) => {
      const padded = await create('  PADDED_NAME  ', 'p');
      isSecret(t, padded.body.secret, { secretKey: 'PADDED_NAME' });
      t.equal((await get('PADDED_NAME')).status, 200);
      isError(t, await create('PADDED_NAME', 'again'), 400, 'BadRequest', 'Secret already exists');
      const long = 'L'.repeat(255);
      t.equal((await create(long, 'long')).status, 200, '255 characters');
      t.equal((await v3('DELETE', `  ${long} `, where)).status, 200, 'the name in a DELETE is trimmed too');
      const before = await state(svc);
      for (const bad of ['a/b', 'a:b', ':', '/', ' ', '   ', 'L'.repeat(256), 'A\nB', 'A\u0000B', 'tab\there', 'x\u007f']) {
        t.test(`POST ${JSON.stringify(bad)}`, async (t) => isError(t, await create(bad, 'v'), 422, 'ValidationFailure'));
        t.test(`PATCH rename to ${JSON.stringify(bad)}`, async (t) =>
          isError(t, await v3('PATCH', 'PADDED_NAME', { ...where, newSecretName: bad }), 422, 'ValidationFailure'));
        t.test(`batch ${JSON.stringify(bad)}`, async (t) =>
          isError(t, await api(svc, 'POST', '/api/v3/secrets/batch/raw', m.token, { ...where, secrets: [{ secretKey: 'GOOD_ONE', secretValue: 'v' }, { secretKey: bad, secretValue: 'v' }] }), 422));
      }
      t.test('malformed percent-encoding in the name', async (t) => isError(t, await api(svc, 'POST', '/api/v3/secrets/raw/%E0%A4%A', m.token, { ...where, secretValue: 'v' }), 400));
      t.test('nothing changed', async (t) => t.same(await state(svc), before));
    });

    t.test('rename via newSecretName', async (t) => {
      const made = await create('OLD_NAME', 'keep me', { secretComment: 'keep this too' });
      await create('TAKEN_NAME', 'other');
      const before = await state(svc);
      isError(t, await v3('PATCH', 'OLD_NAME', { ...where, newSecretName: 'TAKEN_NAME' }), 400, 'BadRequest', 'Secret already exists');
      isError(t, await v3('PATCH', 'OLD_NAME', { ...where, newSecretName: ' TAKEN_NAME ', secretValue: 'lost?' }), 400, 'BadRequest');
      t.same(await state(svc), before, 'a refused rename changes nothing');
      const renamed = await v3('PATCH', 'OLD_NAME', { ...where, newSecretName: '  NEW_NAME ' });
      isSecret(t, renamed.body.secret, { id: made.body.secret.id, secretKey: 'NEW_NAME', secretValue: 'keep me', secretComment: 'keep this too', version: 2 });
      isError(t, await get('OLD_NAME'), 404, 'NotFound', "Secret with name 'OLD_NAME' not found");
      t.same((await get('NEW_NAME')).body.secret, renamed.body.secret);
      const listed = await list();
      t.ok(!listed.body.secrets.some((s: any) => s.secretKey === 'OLD_NAME') && valueOf(listed, 'NEW_NAME') === 'keep me');
      // A blank name is refused on every rename (not read as "no rename"): nothing changes.
      isError(t, await v3('PATCH', 'NEW_NAME', { ...where, newSecretName: '' }), 422, 'ValidationFailure', undefined);
      t.equal((await get('NEW_NAME')).body.secret.version, 2, 'an empty newSecretName is refused and changes nothing');
      t.equal((await v3('PATCH', 'NEW_NAME', { ...where, newSecretName: 'NEW_NAME' })).body.secret.version, 2, 'renaming to itself changes nothing');
      const [audit] = await sql`select secret_key, secret_version, metadata from audit_log where event_type = 'update-secret' and secret_key = 'NEW_NAME' order by id limit 1`;
      t.same([audit!.secretKey, audit!.secretVersion, audit!.metadata], ['NEW_NAME', 2, { renamedFrom: 'OLD_NAME' }]);
      t.same((await v3('POST', 'OLD_NAME', { ...where, secretValue: 'a new one' })).body.secret.version, 1, 'the old name is free again');
    });

    t.test('duplicates: 400, and a batch writes all or nothing', async (t) => {
      await create('DUP', 'first');
      const before = await state(svc);
      isError(t, await create('DUP', 'second'), 400, 'BadRequest', 'Secret already exists');
      isError(t, await create(' DUP ', 'second'), 400, 'BadRequest', 'Secret already exists');
      const batch = (secrets: unknown) => api(svc, 'POST', '/api/v3/secrets/batch/raw', m.token, { ...where, secrets });
      isError(t, await batch([{ secretKey: 'NEW_1', secretValue: '1' }, { secretKey: 'NEW_1', secretValue: '2' }]), 400, 'BadRequest', /more than once/);
      isError(t, await batch([{ secretKey: 'NEW_1', secretValue: '1' }, { secretKey: ' NEW_1', secretValue: '2' }]), 400, 'BadRequest', /more than once/);
      isError(t, await batch([{ secretKey: 'NEW_1', secretValue: '1' }, { secretKey: 'DUP', secretValue: '2' }]), 400, 'BadRequest', /Secret already exists: DUP/);
      t.same(await state(svc), before, 'nothing written');
      isError(t, await get('NEW_1'), 404);
      t.equal((await get('DUP')).body.secret.secretValue, 'first');

      const many = Array.from({ length: 150 }, (_, i) => ({ secretKey: `MANY_${String(i).padStart(3, '0')}`, secretValue: `v${i}-${tok()}`, ...(i % 3 ? {} : { secretComment: `c${i}` }) }));
      many.forEach((x) => written.add(x.secretValue));
      const ok = await batch(many);
      t.equal(ok.status, 200);
      t.same(ok.body.secrets.map((s: any) => [s.secretKey, s.secretValue, s.secretComment, s.version]), many.map((x) => [x.secretKey, x.secretValue, x.secretComment ?? '', 1]));
      const after = await state(svc);
      t.equal(after.secrets, (before.secrets as number) + 150);
      t.equal(after.versions, (before.versions as number) + 150, 'one version row each');
      const listed = await list();
      for (const x of many) if (valueOf(listed, x.secretKey) !== x.secretValue) t.fail(`${x.secretKey} reads back`);
      const events = await sql`select count(*)::int as n from audit_log where event_type = 'create-secret' and secret_key like 'MANY_%' and metadata->>'batch' = 'true'`;
      t.equal(events[0]!.n, 150, 'one audit entry per secret');
    });

    t.test('concurrent writes: one winner for a name, distinct versions for updates, never a 500', async (t) => {
      const racers = await Promise.all([1, 2, 3, 4, 5].map((i) => create('RACE', `racer ${i}`)));
      t.same(racers.map((r) => r.status).filter((s) => s === 200).length, 1, 'one create wins');
      for (const r of racers) if (r.status !== 200) isError(t, r, r.status === 409 ? 409 : 400);
      const updates = await Promise.all([1, 2, 3, 4, 5, 6].map((i) => v3('PATCH', 'RACE', { ...where, secretValue: `u${i}` })));
      t.same(updates.map((r) => r.status), [200, 200, 200, 200, 200, 200]);
      t.same(updates.map((r) => r.body.secret.version).sort(), [2, 3, 4, 5, 6, 7], 'every update its own version');
      const last = updates.find((r) => r.body.secret.version === 7)!.body.secret.secretValue;
      t.equal((await get('RACE')).body.secret.secretValue, last, 'the last version is what is read');
      const deletes = await Promise.all([1, 2, 3].map(() => v3('DELETE', 'RACE', where)));
      t.same(deletes.map((r) => r.status).sort(), [200, 404, 404]);
    });

    t.test('immutable keys need overrideImmutable to change', async (t) => {
      await svc.services.secrets.create(SYSTEM, { project: { id: P }, environment: 'prod', key: 'SIGNING_KEY', value: 'never-changes', comment: 'pinned', immutable: true });
      const before = await state(svc);
      const refused = await v3('PATCH', 'SIGNING_KEY', { ...where, secretValue: 'changed' });
      isError(t, refused, 409, 'Conflict', /must never change/);
      t.same(refused.body.details, { requires: 'overrideImmutable' }, 'details say what a repeat needs');
      // Its own value again changes nothing: 200, nothing written (checked below).
      const same = await v3('PATCH', 'SIGNING_KEY', { ...where, secretValue: 'never-changes' });
      t.same([same.status, same.body.secret?.version], [200, 1], 'the same value again: nothing to refuse, nothing written');
      isError(t, await v3('PATCH', 'SIGNING_KEY', { ...where, newSecretName: 'SIGNING_KEY_2' }), 409, 'Conflict');
      isError(t, await v3('PATCH', 'SIGNING_KEY', { ...where, secretValue: 'changed', overrideImmutable: false }), 409, 'Conflict');
      isError(t, await v3('PATCH', 'SIGNING_KEY', { ...where, secretValue: 'changed', overrideImmutable: 'maybe' }), 422, 'ValidationFailure');
      const refusedDelete = await v3('DELETE', 'SIGNING_KEY', where);
      isError(t, refusedDelete, 409, 'Conflict', /must never change/);
      t.same(refusedDelete.body.details, { requires: 'overrideImmutable' });
      isError(t, await api(svc, 'DELETE', `${one('SIGNING_KEY')}?workspaceId=${P}&environment=prod&overrideImmutable=false`, m.token), 409);
      isError(t, await api(svc, 'DELETE', `/api/v4/secrets/SIGNING_KEY?projectId=${P}&environment=prod`, m.token), 409);
      t.same(await state(svc), before, 'nothing changed');
      t.equal((await get('SIGNING_KEY')).body.secret.secretValue, 'never-changes');

      const comment = await v3('PATCH', 'SIGNING_KEY', { ...where, secretComment: 'still pinned' });
      isSecret(t, comment.body.secret, { secretValue: 'never-changes', secretComment: 'still pinned', version: 2 });
      written.add('changed on purpose');
      const forced = await v3('PATCH', 'SIGNING_KEY', { ...where, secretValue: 'changed on purpose', overrideImmutable: true });
      isSecret(t, forced.body.secret, { secretValue: 'changed on purpose', version: 3 });
      const formForced = await request(`${svc.url}${one('SIGNING_KEY')}`, {
        method: 'PATCH', token: m.token, headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `workspaceId=${P}&environment=prod&secretValue=form&overrideImmutable=true`,
      });
      t.equal(formForced.body.secret.version, 4, '"true" in a form works too');
      isError(t, await v3('PATCH', 'SIGNING_KEY', { ...where, secretValue: 'again' }), 409, 'Conflict', /must never change/); // still immutable afterwards
      const gone = await api(svc, 'DELETE', `${one('SIGNING_KEY')}?workspaceId=${P}&environment=prod&overrideImmutable=true`, m.token);
      t.equal(gone.status, 200, JSON.stringify(gone.body));
      isError(t, await get('SIGNING_KEY'), 404);

      const events = await svc.services.store.sql`select event_type, secret_version, metadata from audit_log
        where project_id = ${P} and secret_key = 'SIGNING_KEY' order by id`;
      t.same(events.map((e) => [e.eventType, e.secretVersion, e.metadata]), [
        ['create-secret', 1, {}],
        ['update-secret', 2, {}],
        ['update-secret', 3, { immutableOverride: true }],
        ['update-secret', 4, { immutableOverride: true }],
        ['delete-secret', 4, { immutableOverride: true }],
      ], 'every change the override let through says so; a comment change needed none');
    });

    t.test('a write is visible to the very next read', async (t) => {
      t.equal((await eso()).status, 200, 'the folder is cached');
      for (let i = 0; i < 15; i++) {
        const v = `fresh-${i}-${tok()}`;
        written.add(v);
        const w = i === 0 ? await create('FRESH', v) : await v3('PATCH', 'FRESH', { ...where, secretValue: v });
        t.equal(w.status, 200);
        if (valueOf(await eso(), 'FRESH') !== v) t.fail(`ESO list after write ${i}`);
        if ((await get('FRESH')).body.secret.secretValue !== v) t.fail(`single read after write ${i}`);
        if ((await get('FRESH', '&expandSecretReferences=true')).body.secret.version !== i + 1) t.fail(`version after write ${i}`);
      }
      t.pass('15 writes, each read back at once');
      t.equal((await v3('DELETE', 'FRESH', where)).status, 200);
      t.notOk((await eso()).body.secrets.some((s: any) => s.secretKey === 'FRESH'), 'a delete too');
      t.equal((await api(svc, 'POST', '/api/v3/secrets/batch/raw', m.token, { ...where, secrets: [{ secretKey: 'FRESH_B', secretValue: 'b' }] })).status, 200);
      t.equal(valueOf(await eso(), 'FRESH_B'), 'b', 'and a batch');
    });

    t.test('bad input on every route: a 4xx JSON answer, nothing changed', async (t) => {
      await create('EXISTING', 'existing value');
      const missing = '00000000-0000-4000-8000-000000000000';
      const before = await state(svc);
      const w = where;
      const cases: Array<[string, Method, string, unknown, number, string?]> = [
        ['POST without secretValue', 'POST', one('NEW'), { ...w }, 422, 'ValidationFailure'],
        ['POST secretValue a number', 'POST', one('NEW'), { ...w, secretValue: 5 }, 422, 'ValidationFailure'],
        ['POST secretValue null', 'POST', one('NEW'), { ...w, secretValue: null }, 422, 'ValidationFailure'],
        ['POST secretValue an object', 'POST', one('NEW'), { ...w, secretValue: { a: 1 } }, 422, 'ValidationFailure'],
        ['POST secretComment a number', 'POST', one('NEW'), { ...w, secretValue: 'v', secretComment: 1 }, 422, 'ValidationFailure'],
        ['POST secretComment too long', 'POST', one('NEW'), { ...w, secretValue: 'v', secretComment: 'c'.repeat(10_001) }, 422, 'ValidationFailure'],
        ['POST skipMultilineEncoding a string', 'POST', one('NEW'), { ...w, secretValue: 'v', skipMultilineEncoding: 'yes' }, 422, 'ValidationFailure'],
        ['POST without environment', 'POST', one('NEW'), { workspaceId: P, secretValue: 'v' }, 422, 'ValidationFailure'],
        ['POST environment a number', 'POST', one('NEW'), { workspaceId: P, environment: 1, secretValue: 'v' }, 422, 'ValidationFailure'],
        ['POST without a project', 'POST', one('NEW'), { environment: 'prod', secretValue: 'v' }, 422, 'ValidationFailure'],
        ['POST workspaceId a number', 'POST', one('NEW'), { ...w, workspaceId: 42, secretValue: 'v' }, 422, 'ValidationFailure'],
        ['POST workspaceId too long', 'POST', one('NEW'), { ...w, workspaceId: 'x'.repeat(65), secretValue: 'v' }, 422, 'ValidationFailure'],
        ['POST workspaceId not a uuid', 'POST', one('NEW'), { ...w, workspaceId: "x' or 1=1 --", secretValue: 'v' }, 404, 'NotFound'],
        ['POST unknown workspaceId', 'POST', one('NEW'), { ...w, workspaceId: missing, secretValue: 'v' }, 404, 'NotFound'],
        ['POST unknown projectSlug', 'POST', one('NEW'), { projectSlug: 'nope', environment: 'prod', secretValue: 'v' }, 404, 'NotFound'],
        ['POST projectSlug with a NUL', 'POST', one('NEW'), { projectSlug: 'home\u0000lab', environment: 'prod', secretValue: 'v' }, 422, 'ValidationFailure'],
        ['POST workspaceId with a NUL', 'POST', one('NEW'), { ...w, workspaceId: `${P}\u0000`, secretValue: 'v' }, 422, 'ValidationFailure'],
        ['POST unknown environment', 'POST', one('NEW'), { ...w, environment: 'qa', secretValue: 'v' }, 404, 'NotFound'],
        ['POST environment with a NUL', 'POST', one('NEW'), { ...w, environment: 'prod\u0000', secretValue: 'v' }, 404, 'NotFound'],
        ['POST unknown folder', 'POST', one('NEW'), { ...w, secretPath: '/nope', secretValue: 'v' }, 404, 'SecretPathNotFound'],
        ['POST secretPath a number', 'POST', one('NEW'), { ...w, secretPath: 7, secretValue: 'v' }, 422, 'ValidationFailure'],
        ['POST secretPath ..', 'POST', one('NEW'), { ...w, secretPath: '/..', secretValue: 'v' }, 422, 'ValidationFailure'],
        ['POST secretPath /a/../b', 'POST', one('NEW'), { ...w, secretPath: '/a/../b', secretValue: 'v' }, 422, 'ValidationFailure'],
        ['POST secretPath relative', 'POST', one('NEW'), { ...w, secretPath: '../etc', secretValue: 'v' }, 422, 'ValidationFailure'],
        ['POST secretPath encoded dots', 'POST', one('NEW'), { ...w, secretPath: '/%2e%2e', secretValue: 'v' }, 422, 'ValidationFailure'],
        ['POST secretPath backslash', 'POST', one('NEW'), { ...w, secretPath: '/..\\x', secretValue: 'v' }, 422, 'ValidationFailure'],
        ['POST secretPath too long', 'POST', one('NEW'), { ...w, secretPath: `/${'a'.repeat(1100)}`, secretValue: 'v' }, 422, 'ValidationFailure'],
        ['POST type personal', 'POST', one('NEW'), { ...w, type: 'personal', secretValue: 'v' }, 422, 'ValidationFailure'],
        ['POST an array body', 'POST', one('NEW'), [{ ...w, secretValue: 'v' }], 422, 'ValidationFailure'],
        ['POST a string body', 'POST', one('NEW'), 'secretValue', 422, 'ValidationFailure'],
        ['POST a null body', 'POST', one('NEW'), null, 422, 'ValidationFailure'],
        ['POST an existing name', 'POST', one('EXISTING'), { ...w, secretValue: 'v' }, 400, 'BadRequest'],
        ['PATCH an unknown secret', 'PATCH', one('NOPE'), { ...w, secretValue: 'v' }, 404, 'NotFound'],
        ['PATCH secretValue a number', 'PATCH', one('EXISTING'), { ...w, secretValue: 5 }, 422, 'ValidationFailure'],
        ['PATCH secretValue too long', 'PATCH', one('EXISTING'), { ...w, secretValue: 'v'.repeat(MAX_VALUE + 1) }, 422, 'ValidationFailure'],
        ['PATCH newSecretName a number', 'PATCH', one('EXISTING'), { ...w, newSecretName: 5 }, 422, 'ValidationFailure'],
        ['PATCH newSecretName with a slash', 'PATCH', one('EXISTING'), { ...w, newSecretName: 'a/b' }, 422, 'ValidationFailure'],
        ['PATCH in an unknown folder', 'PATCH', one('EXISTING'), { ...w, secretPath: '/nope', secretValue: 'v' }, 404, 'SecretPathNotFound'],
        ['PATCH an array body', 'PATCH', one('EXISTING'), ['v'], 422, 'ValidationFailure'],
        ['PATCH with traversal', 'PATCH', one('EXISTING'), { ...w, secretPath: '/../', secretValue: 'v' }, 422, 'ValidationFailure'],
        ['PATCH in another environment', 'PATCH', one('EXISTING'), { ...w, environment: 'dev', secretValue: 'v' }, 404, 'NotFound'],
        ['DELETE an unknown secret', 'DELETE', one('NOPE'), { ...w }, 404, 'NotFound'],
        ['DELETE without environment', 'DELETE', one('EXISTING'), { workspaceId: P }, 422, 'ValidationFailure'],
        ['DELETE without a project', 'DELETE', one('EXISTING'), { environment: 'prod' }, 422, 'ValidationFailure'],
        ['DELETE an array body', 'DELETE', one('EXISTING'), [w], 422, 'ValidationFailure'],
        ['DELETE with traversal', 'DELETE', one('EXISTING'), { ...w, secretPath: '/a/..' }, 422, 'ValidationFailure'],
        ['DELETE unknown project', 'DELETE', one('EXISTING'), { ...w, workspaceId: missing }, 404, 'NotFound'],
        ['batch without secrets', 'POST', '/api/v3/secrets/batch/raw', { ...w }, 422, 'ValidationFailure'],
        ['batch of no secrets', 'POST', '/api/v3/secrets/batch/raw', { ...w, secrets: [] }, 422, 'ValidationFailure'],
        ['batch secrets an object', 'POST', '/api/v3/secrets/batch/raw', { ...w, secrets: { secretKey: 'A', secretValue: 'b' } }, 422, 'ValidationFailure'],
        ['batch element without secretKey', 'POST', '/api/v3/secrets/batch/raw', { ...w, secrets: [{ secretValue: 'b' }] }, 422, 'ValidationFailure'],
        ['batch element without secretValue', 'POST', '/api/v3/secrets/batch/raw', { ...w, secrets: [{ secretKey: 'A' }] }, 422, 'ValidationFailure'],
        ['batch element a string', 'POST', '/api/v3/secrets/batch/raw', { ...w, secrets: ['A=b'] }, 422, 'ValidationFailure'],
        ['batch value a number', 'POST', '/api/v3/secrets/batch/raw', { ...w, secrets: [{ secretKey: 'A', secretValue: 1 }] }, 422, 'ValidationFailure'],
        ['batch of 1001', 'POST', '/api/v3/secrets/batch/raw', { ...w, secrets: Array.from({ length: 1001 }, (_, i) => ({ secretKey: `K${i}`, secretValue: 'v' })) }, 422, 'ValidationFailure'],
        ['batch in an unknown folder', 'POST', '/api/v3/secrets/batch/raw', { ...w, secretPath: '/nope', secrets: [{ secretKey: 'A', secretValue: 'b' }] }, 404, 'SecretPathNotFound'],
        ['batch in an unknown environment', 'POST', '/api/v3/secrets/batch/raw', { ...w, environment: 'qa', secrets: [{ secretKey: 'A', secretValue: 'b' }] }, 404, 'NotFound'],
        ['batch with traversal', 'POST', '/api/v3/secrets/batch/raw', { ...w, secretPath: '/../x', secrets: [{ secretKey: 'A', secretValue: 'b' }] }, 422, 'ValidationFailure'],
        ['batch an array body', 'POST', '/api/v3/secrets/batch/raw', [{ secretKey: 'A', secretValue: 'b' }], 422, 'ValidationFailure'],
        ['POST an empty name', 'POST', '/api/v3/secrets/raw/', { ...w, secretValue: 'v' }, 404, 'NotFound'],
        ['POST an empty name on v4', 'POST', '/api/v4/secrets/', { projectId: P, environment: 'prod', secretValue: 'v' }, 404, 'NotFound'],
        ['POST a blank name', 'POST', one(' '), { ...w, secretValue: 'v' }, 422, 'ValidationFailure'],
        ['v4 POST without projectId', 'POST', '/api/v4/secrets/NEW', { environment: 'prod', secretValue: 'v' }, 422, 'ValidationFailure'],
        ['v4 POST with a slug as projectId', 'POST', '/api/v4/secrets/NEW', { projectId: 'homelab', environment: 'prod', secretValue: 'v' }, 404, 'NotFound'],
        ['v4 PATCH unknown secret', 'PATCH', '/api/v4/secrets/NOPE', { projectId: P, environment: 'prod', secretValue: 'v' }, 404, 'NotFound'],
        ['v4 DELETE unknown folder', 'DELETE', '/api/v4/secrets/EXISTING', { projectId: P, environment: 'prod', secretPath: '/x' }, 404, 'SecretPathNotFound'],
        ['v4 batch of no secrets', 'POST', '/api/v4/secrets/batch', { projectId: P, environment: 'prod', secrets: [] }, 422, 'ValidationFailure'],
        ['v4 batch NUL projectId', 'POST', '/api/v4/secrets/batch', { projectId: '\u0000', environment: 'prod', secrets: [{ secretKey: 'A', secretValue: 'b' }] }, 422, 'ValidationFailure'],
      ];
      for (const [name, method, path, body, status, error] of cases) {
        t.test(name, async (t) => isError(t, await api(svc, method, path, m.token, body), status, error));
      }
      t.test('reads: bad queries are 4xx too', async (t) => {
        isError(t, await api(svc, 'GET', `/api/v3/secrets/raw?workspaceSlug=home%00lab&environment=prod`, m.token), 422, 'ValidationFailure');
        isError(t, await api(svc, 'GET', `/api/v3/secrets/raw/EXISTING?workspaceSlug=%01&environment=prod`, m.token), 422);
        isError(t, await api(svc, 'GET', `/api/v4/secrets?projectId=%00&environment=prod`, m.token), 422);
        isError(t, await api(svc, 'GET', `/api/v3/secrets/raw?workspaceId=${P}&environment=prod&secretPath=%2F..%2Fx`, m.token), 422);
        isError(t, await api(svc, 'GET', `/api/v3/secrets/raw/EXISTING?workspaceId=${P}&environment=prod&version=0`, m.token), 422);
        isError(t, await api(svc, 'GET', `/api/v3/secrets/raw/EXISTING?workspaceId=${P}&environment=prod&version=abc`, m.token), 422);
        isError(t, await api(svc, 'GET', `/api/v3/secrets/raw/EXISTING?workspaceId=${P}&environment=prod&version=9`, m.token), 404, 'NotFound');
      });
      t.test('malformed JSON, other media types, no token', async (t) => {
        const url = `${svc.url}${one('NEW')}`;
        isError(t, await request(url, { method: 'POST', token: m.token, headers: { 'content-type': 'application/json' }, body: '{"secretValue":' }), 400, 'BadRequest', 'Malformed JSON body');
        isError(t, await request(url, { method: 'PATCH', token: m.token, headers: { 'content-type': 'application/json' }, body: '{' }), 400, 'BadRequest');
        isError(t, await request(`${svc.url}/api/v3/secrets/batch/raw`, { method: 'POST', token: m.token, headers: { 'content-type': 'application/json' }, body: '[' }), 400, 'BadRequest');
        isError(t, await request(url, { method: 'POST', token: m.token, headers: { 'content-type': 'text/plain' }, body: 'v' }), 415);
        isError(t, await request(url, { method: 'POST', token: m.token, headers: { 'content-type': 'application/json' }, body: `${'['.repeat(40)}${']'.repeat(40)}` }), 400, 'BadRequest');
        for (const [method, path] of [['POST', one('NEW')], ['PATCH', one('EXISTING')], ['DELETE', one('EXISTING')], ['POST', '/api/v3/secrets/batch/raw'], ['POST', '/api/v4/secrets/NEW'], ['POST', '/api/v4/secrets/batch']] as const) {
          isError(t, await api(svc, method, path, undefined, { ...w, secretValue: 'v', secrets: [{ secretKey: 'A', secretValue: 'b' }] }), 401, 'UnauthorizedError', 'Token missing');
          isError(t, await api(svc, method, path, 'not.a.token', { ...w, secretValue: 'v' }), 401, 'TokenError');
        }
      });
      t.test('nothing changed', async (t) => {
        t.same(await state(svc), before);
        t.equal((await get('EXISTING')).body.secret.secretValue, 'existing value');
      });
    });

    t.test('the audit trail records every write and never a value', async (t) => {
      const rows = await sql<{ eventType: string; secretKey: string; secretVersion: number; actorType: string; actorId: string }[]>`
        select event_type, secret_key, secret_version, actor_type, actor_id from audit_log
        where project_id = ${P} and secret_key in ('APP_TOKEN', 'OLD_NAME', 'NEW_NAME') order by id`;
      t.same(rows.filter((r) => r.secretKey === 'APP_TOKEN').map((r) => [r.eventType, r.secretVersion]), [
        ['create-secret', 1], ['update-secret', 2], ['update-secret', 3], ['delete-secret', 3],
      ], 'the PATCH that changed nothing has no entry');
      t.ok(rows.every((r) => r.actorType === 'identity' && r.actorId === m.identityId), 'recorded as the identity that wrote');
      const text = (await sql<{ t: string }[]>`select audit_log::text as t from audit_log`).map((r) => r.t).join('\n');
      const leaked = [...written].filter((v) => v.length >= 6 && text.includes(v));
      t.same(leaked, [], 'no written value appears in the audit trail');
      const tokens = [...written].flatMap((v) => v.match(/tok[0-9a-f]{12}/g) ?? []);
      t.ok(tokens.length > 20, 'the marked values were written');
      t.same(tokens.filter((x) => text.includes(x)), [], 'not even a part of one');
      for (const v of Object.values(INVENTORY)) if (text.includes(v)) t.fail('an inventory value is in the audit trail');
    });
  });
}
