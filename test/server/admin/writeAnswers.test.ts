// A value only to a reader, in the answers to writes: every route that writes a secret
// and answers it (create, change, rename, delete, batch create, change and delete, in v3 and v4, and version
// restore) is driven by identities whose custom roles may write but not read values
// (`describeSecret`+`edit`, `describeSecret`+`delete`, `describeSecret`+`create`, and
// `create` alone). Each raw answer body is searched for every value stored or sent; an
// answer that names a secret says `secretValueHidden: true` with Infisical's placeholder.
// The same calls by a member (who reads values) do carry the value: the search can fail.
// And a write that changes nothing writes no version and no audit entry.
import t from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { startTestService, testEnv, type TestService } from '../../helpers/service.js';
import { machine, superadmin } from './helpers.js';

const HIDDEN = '<hidden-by-infisical>';

interface Raw {
  status: number;
  text: string;
  body: any;
}

async function raw(svc: TestService, method: string, path: string, token: string, json?: unknown): Promise<Raw> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (json !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${svc.url}${path}`, { method, headers, body: json === undefined ? undefined : JSON.stringify(json) });
  const text = await res.text();
  return { status: res.status, text, body: text === '' ? undefined : JSON.parse(text) };
}

t.test('write answers carry values only for callers who may read them', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  await superadmin(svc);
  const s = svc.services;
  const P = (await s.projects.create(SYSTEM, { name: 'writers' })).id;
  const where = { project: { id: P }, environment: 'prod', secretPath: '/' };
  const tag = await s.tags.create(SYSTEM, { project: { id: P }, slug: 'db' });

  // Every value ever stored or sent holds "stored-value" (a value that is a prefix of another would hide nothing).
  let n = 0;
  const fresh = (what: string) => `stored-value-${what}-${++n}-x`;
  const stored: string[] = [];
  /** A secret with two versions (v1, v2), both values remembered. */
  const seed = async (key: string) => {
    const v1 = fresh(`${key}-v1`);
    const v2 = fresh(`${key}-v2`);
    stored.push(v1, v2);
    const created = await s.secrets.create(SYSTEM, { ...where, key, value: v1, comment: 'a comment' });
    await s.secrets.update(SYSTEM, { ...where, key, value: v2 });
    return created.id;
  };
  const sent = (what: string) => {
    const v = fresh(what);
    stored.push(v);
    return v;
  };

  const roles: Array<[slug: string, actions: string[]]> = [
    ['describe-edit', ['describeSecret', 'edit']],
    ['describe-delete', ['describeSecret', 'delete']],
    ['describe-create', ['describeSecret', 'create']],
    ['create-only', ['create']],
  ];
  const tokens: Record<string, string> = {};
  for (const [slug, actions] of roles) {
    await s.roles.create(SYSTEM, { id: P }, { slug, name: slug, permissions: [{ subject: 'secrets', action: actions }] });
    const m = await machine(svc, slug);
    await s.memberships.add(SYSTEM, { project: { id: P }, member: { kind: 'identity', id: m.identityId }, role: slug });
    tokens[slug] = m.token;
  }
  tokens.member = (await machine(svc, 'member', [[P, 'member']])).token;

  /** The write routes that answer a secret, for one caller: [what, method, path, body]. */
  const routes = async (who: string) => {
    const calls: Array<[string, string, string, unknown]> = [];
    for (const v of ['v3', 'v4'] as const) {
      const one = (name: string) => (v === 'v3' ? `/api/v3/secrets/raw/${name}` : `/api/v4/secrets/${name}`);
      const batch = v === 'v3' ? '/api/v3/secrets/batch/raw' : '/api/v4/secrets/batch';
      const at = v === 'v3' ? { workspaceId: P, environment: 'prod', secretPath: '/' } : { projectId: P, environment: 'prod', secretPath: '/' };
      const k = (what: string) => `${who}_${v}_${what}`.toUpperCase().replaceAll('-', '_');
      const ids: Record<string, string> = {};
      for (const what of ['comment', 'nothing', 'same', 'value', 'rename', 'tags', 'skip', 'delete', 'bchange', 'bdelete']) ids[what] = await seed(k(what));
      calls.push(
        [`${v} create`, 'POST', one(k('new')), { ...at, secretValue: sent('create'), secretComment: 'c' }],
        [`${v} change the comment only`, 'PATCH', one(k('comment')), { ...at, secretComment: 'another comment' }],
        [`${v} change nothing`, 'PATCH', one(k('nothing')), { ...at }],
        [`${v} change nothing, saying so`, 'PATCH', one(k('same')), { ...at, secretComment: 'a comment', newSecretName: k('same'), tagIds: [] }],
        [`${v} change the value`, 'PATCH', one(k('value')), { ...at, secretValue: sent('patch') }],
        [`${v} rename`, 'PATCH', one(k('rename')), { ...at, newSecretName: k('renamed') }],
        [`${v} change the tags`, 'PATCH', one(k('tags')), { ...at, tagIds: [tag.id] }],
        [`${v} change the multiline flag`, 'PATCH', one(k('skip')), { ...at, skipMultilineEncoding: true }],
        [`${v} delete`, 'DELETE', one(k('delete')), { ...at }],
        [`${v} batch create`, 'POST', batch, { ...at, secrets: [{ secretKey: k('b1'), secretValue: sent('batch1') }, { secretKey: k('b2'), secretValue: sent('batch2') }] }],
        [`${v} batch change`, 'PATCH', batch, { ...at, secrets: [{ secretKey: k('bchange'), secretValue: sent('bchange') }] }],
        [`${v} batch delete`, 'DELETE', batch, { ...at, secrets: [{ secretKey: k('bdelete') }] }],
      );
      if (v === 'v3') {
        const r1 = await seed(k('restore'));
        const r2 = await seed(k('restorecur'));
        calls.push(
          ['restore an older version', 'POST', `/api/v1/secret/${r1}/secret-versions/1/restore`, {}],
          ['restore the current version', 'POST', `/api/v1/secret/${r2}/secret-versions/2/restore`, {}],
        );
      }
    }
    return calls;
  };

  const nameds = (body: any): any[] => (body?.secret ? [body.secret] : Array.isArray(body?.secrets) ? body.secrets : []);
  let searched = 0;
  for (const [slug] of roles) {
    await t.test(`${slug}: no value in any answer`, async (t) => {
      let succeeded = 0;
      for (const [what, method, path, body] of await routes(slug)) {
        const r = await raw(svc, method, path, tokens[slug]!, body);
        searched++;
        t.ok(r.status < 500, `${what}: not a fault (${r.status})`);
        for (const v of stored) if (r.text.includes(v)) t.fail(`${what}: the answer (${r.status}) holds a stored value: ${r.text}`);
        t.notMatch(r.text, /stored-value/, `${what}: no stored value in the answer (${r.status})`);
        if (r.status === 200) {
          succeeded++;
          const secrets = nameds(r.body);
          t.ok(secrets.length > 0, `${what}: answers the secret`);
          for (const x of secrets) t.match(x, { secretValue: HIDDEN, secretValueHidden: true }, `${what}: the value is hidden`);
        }
      }
      // What each role may do, it did (the answers searched were successes, not only refusals).
      const expected: Record<string, number> = { 'describe-edit': 2 * 8 + 2, 'describe-delete': 4, 'describe-create': 4, 'create-only': 0 };
      t.equal(succeeded, expected[slug], `${slug}: ${expected[slug]} writes succeeded`);
    });
  }

  await t.test('a member (who reads values) gets them back: the search can find them', async (t) => {
    let carried = 0;
    for (const [what, method, path, body] of await routes('member')) {
      const r = await raw(svc, method, path, tokens.member!, body);
      t.equal(r.status, 200, `${what}: 200 ${r.status !== 200 ? r.text : ''}`);
      if (/stored-value/.test(r.text)) carried++;
      for (const x of nameds(r.body)) t.equal(x.secretValueHidden, false, `${what}: not hidden`);
    }
    t.equal(carried, 2 * 12 + 2, 'every answer carries its value');
  });

  await t.test('a write that changes nothing writes no version and no audit entry', async (t) => {
    const sql = s.store.sql;
    const count = async (id: string) => {
      const [row] = await sql<{ versions: number; audit: number; version: number }[]>`select
        (select count(*)::int from secret_versions where secret_id = ${id}) as versions,
        (select count(*)::int from audit_log) as audit,
        (select version from secrets where id = ${id}) as version`;
      return row!;
    };
    const id = await seed('NOOP');
    const value = stored.at(-1)!;
    const patch = (token: string, body: Record<string, unknown>) => raw(svc, 'PATCH', '/api/v3/secrets/raw/NOOP', token, { workspaceId: P, environment: 'prod', secretPath: '/', ...body });
    const before = await count(id);
    const unchanged: Array<[string, string, Record<string, unknown>]> = [
      ['member, nothing', tokens.member!, {}],
      ['member, the same value, comment, name, tags and flag', tokens.member!, { secretValue: value, secretComment: 'a comment', newSecretName: 'NOOP', tagIds: [], skipMultilineEncoding: false }],
      ['describe+edit, nothing', tokens['describe-edit']!, {}],
      ['describe+edit, the same comment', tokens['describe-edit']!, { secretComment: 'a comment' }],
    ];
    for (const [what, token, body] of unchanged) {
      const r = await patch(token, body);
      t.equal(r.status, 200, `${what}: 200`);
      t.equal(r.body.secret.version, 2, `${what}: answers the current version`);
      t.same(await count(id), before, `${what}: no version, no audit entry`);
    }
    const restore = await raw(svc, 'POST', `/api/v1/secret/${id}/secret-versions/2/restore`, tokens.member!, {});
    t.equal(restore.status, 200);
    t.same(await count(id), before, 'restoring the current version writes nothing');
    // For a caller who may not read the value, a value sent is a change even when equal:
    // otherwise the version number would tell whether a guess was right.
    const guess = await patch(tokens['describe-edit']!, { secretValue: value });
    t.equal(guess.status, 200);
    t.equal(guess.body.secret.version, 3, 'a value sent by a non-reader makes a new version');
    t.equal((await count(id)).versions, before.versions + 1);
    // A member restoring a version equal to the current one writes nothing either.
    const now = await count(id);
    t.equal((await raw(svc, 'POST', `/api/v1/secret/${id}/secret-versions/2/restore`, tokens.member!, {})).status, 200);
    t.same(await count(id), now, 'restoring a version equal to the current one writes nothing');
  });
  t.comment(`${searched} answers of write-only roles searched`);
});
