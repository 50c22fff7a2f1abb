// Export over HTTP: GET /api/v1/projects/:projectId/export gives one environment and
// folder as JSON or RFC 4180 CSV, to project admins and the superadmin only. What comes
// out is exactly what went in (parsed back here with an independent CSV reader), and
// every export is in the audit trail without a single value.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { BACKENDS, seedHomelab, startTestService, testEnv } from '../../helpers/service.js';
import { api, isError, machine, plainUser, snapshot, superadmin } from './helpers.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * A strict RFC 4180 reader: CRLF between records, fields quoted when they hold a comma,
 * quote or line break, quotes doubled inside. Throws on anything else.
 */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let i = 0;
  const endField = () => {
    row.push(field);
    field = '';
  };
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      if (field !== '') throw new Error(`quote inside an unquoted field at ${i}`);
      i++;
      for (;;) {
        if (i >= text.length) throw new Error('unterminated quoted field');
        if (text[i] === '"') {
          if (text[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        field += text[i++];
      }
      const next = text[i];
      if (next !== undefined && next !== ',' && !(next === '\r' && text[i + 1] === '\n')) throw new Error(`garbage after a closing quote at ${i}`);
      if (field === '') field = '\u0000quoted-empty';
      continue;
    }
    if (c === ',') {
      endField();
      i++;
      continue;
    }
    if (c === '\r' && text[i + 1] === '\n') {
      endField();
      rows.push(row);
      row = [];
      i += 2;
      continue;
    }
    if (c === '\r' || c === '\n') throw new Error(`bare line break outside quotes at ${i}`);
    field += c;
    i++;
  }
  if (field !== '' || row.length > 0) throw new Error('the last record has no CRLF');
  return rows.map((r) => r.map((f) => (f === '\u0000quoted-empty' ? '' : f)));
}

type Entry = { key: string; value: string; comment: string };
/** What CSV holds of an entry: cells a spreadsheet would run as a formula carry a leading apostrophe (OWASP). */
const neutral = (s: string) => (/^[=+\-@\t\r]/.test(s) ? `'${s}` : s);
const asCsv = (entries: Entry[]) => entries.map((e) => ({ key: neutral(e.key), value: neutral(e.value), comment: neutral(e.comment) }));
const sorted = (xs: Entry[]) => [...xs].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));

for (const backend of BACKENDS) {
  t.test(`export (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend));
    const admin = await superadmin(svc);
    const as = admin.token;
    const seeded = await seedHomelab(svc.services);
    const H = seeded.projectId;
    const project = await svc.services.projects.create(SYSTEM, { name: 'vault export' });
    const P = project.id;
    const sql = svc.services.store.sql;
    const tok = () => `tok${randomBytes(6).toString('hex')}`;

    const folder = await api(svc, 'POST', '/api/v2/folders', as, { projectId: P, environment: 'prod', name: 'app', path: '/' });
    t.equal(folder.status, 200, JSON.stringify(folder.body));

    const root: Entry[] = [
      { key: 'PLAIN', value: `plain${tok()}`, comment: '' },
      { key: 'COMMA', value: `a,b,,c,${tok()}`, comment: 'x,y' },
      { key: 'QUOTES', value: `"quoted" and ""double"" ${tok()}`, comment: 'say "hi"' },
      { key: 'NEWLINES', value: `l1\nl2\r\nl3\r${tok()}\n`, comment: 'multi\nline' },
      { key: 'UNICODE', value: `🔐 ключ 密钥 ${tok()}`, comment: 'ünï' },
      { key: 'REF', value: '${PLAIN}', comment: '${PLAIN} stays a reference' },
      { key: 'EMPTY', value: '', comment: '' },
      { key: 'SPACES', value: `  lead and trail ${tok()}  `, comment: ' c ' },
      { key: 'FORMULA', value: `=SUM(A1:A2)+${tok()}`, comment: '@cmd' },
      { key: 'ONLY_QUOTE', value: '"', comment: '""' },
      { key: 'KEY,WITH"ODD CHARS', value: `odd${tok()}`, comment: '' },
      { key: 'PEM', value: `-----BEGIN KEY-----\n${randomBytes(200).toString('base64')}\n-----END KEY-----\n`, comment: '' },
    ];
    const app: Entry[] = [{ key: 'IN_APP', value: `in app, "nested" ${tok()}`, comment: 'app comment' }];
    for (const [path, entries] of [['/', root], ['/app', app]] as const) {
      const r = await api(svc, 'POST', '/api/v3/secrets/batch/raw', as, {
        workspaceId: P, environment: 'prod', secretPath: path,
        secrets: entries.map((e) => ({ secretKey: e.key, secretValue: e.value, ...(e.comment ? { secretComment: e.comment } : {}) })),
      });
      t.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
    }

    const url = (p: string, q: string) => `${svc.url}/api/v1/projects/${p}/export?${q}`;
    const download = async (q: string, token = as, p = P) => {
      const res = await fetch(url(p, q), { headers: token ? { authorization: `Bearer ${token}` } : {} });
      return { status: res.status, headers: res.headers, text: await res.text() };
    };
    const exports = async () => (await sql<{ n: number }[]>`select count(*)::int as n from audit_log where event_type = 'export-secrets'`)[0]!.n;

    t.test('JSON: everything in the folder, exactly as written', async (t) => {
      const r = await download('environment=prod&secretPath=%2F&format=json');
      t.equal(r.status, 200, r.text);
      t.equal(r.headers.get('content-type'), 'application/json; charset=utf-8');
      t.equal(r.headers.get('content-disposition'), 'attachment; filename="vault-export-prod-root.json"');
      t.equal(r.headers.get('cache-control'), 'no-store');
      const body = JSON.parse(r.text);
      t.same(Object.keys(body).sort(), ['environment', 'exportedAt', 'project', 'secretPath', 'secrets']);
      t.same(body.project, { id: P, slug: project.slug });
      t.same([body.environment, body.secretPath], ['prod', '/']);
      t.match(body.exportedAt, ISO);
      for (const s of body.secrets) t.same(Object.keys(s), ['key', 'value', 'comment']);
      t.same(sorted(body.secrets), sorted(root), 'every key, value and comment as written; references not expanded');
      const dflt = await download('environment=prod');
      t.same(sorted(JSON.parse(dflt.text).secrets), sorted(root), 'json and / are the defaults');
      const sub = await download('environment=prod&secretPath=%2Fapp%2F');
      t.equal(sub.headers.get('content-disposition'), 'attachment; filename="vault-export-prod-app.json"');
      t.same(JSON.parse(sub.text).secrets, app, 'a sub-folder holds only its own secrets');
      t.same(JSON.parse(sub.text).secretPath, '/app');
      const empty = await download('environment=dev');
      t.same(JSON.parse(empty.text).secrets, [], 'an empty environment exports nothing');
    });

    t.test('CSV: RFC 4180, parsed back to the same entries', async (t) => {
      const r = await download('environment=prod&secretPath=%2F&format=csv');
      t.equal(r.status, 200, r.text);
      t.equal(r.headers.get('content-type'), 'text/csv; charset=utf-8');
      t.equal(r.headers.get('content-disposition'), 'attachment; filename="vault-export-prod-root.csv"');
      const rows = parseCsv(r.text);
      t.same(rows[0], ['key', 'value', 'comment'], 'the header');
      t.ok(rows.every((row) => row.length === 3), 'three fields in every record');
      t.same(sorted(rows.slice(1).map(([key, value, comment]) => ({ key: key!, value: value!, comment: comment! }))), sorted(asCsv(root)));
      const formula = rows.find((row) => row[0] === 'FORMULA')!;
      t.ok(formula[1]!.startsWith("'=SUM(A1:A2)+") && formula[2] === "'@cmd", 'a formula and an @ command are neutralised');
      t.ok(rows.find((row) => row[0] === 'PEM')![1]!.startsWith("'-----BEGIN KEY-----"), 'so is a leading minus');
      t.ok(r.text.includes(`"${root[2]!.value.replaceAll('"', '""')}"`), 'quotes are doubled inside a quoted field');
      t.ok(r.text.startsWith('key,value,comment\r\n') && r.text.endsWith('\r\n'), 'CRLF line ends');
      const sub = parseCsv((await download('environment=prod&secretPath=%2Fapp&format=csv')).text);
      t.same(sub, [['key', 'value', 'comment'], [app[0]!.key, app[0]!.value, app[0]!.comment]]);
      t.same((await download('environment=staging&format=csv')).text, 'key,value,comment\r\n', 'an empty folder is the header alone');
      t.throws(() => parseCsv('a,"b"c\r\n'), 'the reader itself is strict');
      t.throws(() => parseCsv('a,b\nc\r\n'));
    });

    t.test('what the export reads is the latest write', async (t) => {
      const v = `rotated${tok()}`;
      t.equal((await api(svc, 'PATCH', '/api/v3/secrets/raw/PLAIN', as, { workspaceId: P, environment: 'prod', secretValue: v })).status, 200);
      root[0]!.value = v;
      t.equal(JSON.parse((await download('environment=prod')).text).secrets.find((s: Entry) => s.key === 'PLAIN').value, v);
      t.same(parseCsv((await download('environment=prod&format=csv')).text).find((r) => r[0] === 'PLAIN'), ['PLAIN', v, '']);
    });

    t.test('every export is audited, with where and how much, never a value', async (t) => {
      const n0 = await exports();
      t.equal((await download('environment=prod&format=csv')).status, 200);
      t.equal(await exports(), n0 + 1);
      const [row] = await sql`select * from audit_log where event_type = 'export-secrets' order by id desc limit 1`;
      t.match(row, { actorType: 'user', actorId: admin.userId, projectId: P, environment: 'prod', secretPath: '/', secretKey: null });
      t.same(row!.metadata, { format: 'csv', count: root.length });
      const text = (await sql<{ t: string }[]>`select audit_log::text as t from audit_log`).map((x) => x.t).join('\n');
      const marks = [...root, ...app].flatMap((e) => e.value.match(/tok[0-9a-f]{12}/g) ?? []);
      t.ok(marks.length >= 8);
      t.same(marks.filter((m) => text.includes(m)), [], 'no value in the audit trail');
    });

    t.test('project admins and the superadmin only', async (t) => {
      const adminId = await machine(svc, 'exp-admin', [[P, 'admin']]);
      const pat = await plainUser(svc, 'pat@example.test');
      const lead = await plainUser(svc, 'lead@example.test');
      t.equal((await api(svc, 'POST', `/api/v1/projects/${P}/memberships/users/${lead.userId}`, as, { role: 'admin' })).status, 200);
      const allowed: Array<[string, string]> = [['the superadmin', as], ['an identity with the admin role', adminId.token], ['a person with the admin role', lead.token]];
      for (const [who, token] of allowed) {
        const n0 = await exports();
        const r = await download('environment=prod&format=csv', token);
        t.equal(r.status, 200, `${who}: ${r.text.slice(0, 200)}`);
        t.same(sorted(parseCsv(r.text).slice(1).map(([key, value, comment]) => ({ key: key!, value: value!, comment: comment! }))), sorted(asCsv(root)), who);
        const [last] = await sql`select actor_id from audit_log where event_type = 'export-secrets' order by id desc limit 1`;
        t.equal(await exports(), n0 + 1, `${who}: audited`);
        t.equal(last!.actorId, who === 'the superadmin' ? admin.userId : who.includes('identity') ? adminId.identityId : lead.userId);
      }
      const refused: Array<[string, string | undefined, number, string, string]> = [
        ['an identity with the member role', (await machine(svc, 'exp-member', [[P, 'member']])).token, 403, 'PermissionDenied', 'You are not allowed to access this resource'],
        ['an identity with the viewer role', (await machine(svc, 'exp-viewer', [[P, 'viewer']])).token, 403, 'PermissionDenied', 'You are not allowed to access this resource'],
        ['an identity with the no-access role', (await machine(svc, 'exp-none', [[P, 'no-access']])).token, 403, 'PermissionDenied', 'You are not allowed to access this resource'],
        // Not a member: as a missing project.
        ['an identity without membership', (await machine(svc, 'exp-stranger')).token, 404, 'NotFound', `Project with ID '${P}' not found`],
        ['an admin of another project', (await machine(svc, 'exp-other-admin', [[H, 'admin']])).token, 404, 'NotFound', `Project with ID '${P}' not found`],
        ['a person without membership', pat.token, 404, 'NotFound', `Project with ID '${P}' not found`],
        ['no token', undefined, 401, 'UnauthorizedError', 'Token missing'],
        ['a bad token', 'a.b.c', 401, 'TokenError', ''],
      ];
      const after = { ...(await snapshot(svc)), exports: await exports() };
      for (const [who, token, status, error, message] of refused) {
        t.test(who, async (t) => {
          for (const format of ['json', 'csv']) {
            const r = await api(svc, 'GET', `/api/v1/projects/${P}/export?environment=prod&format=${format}`, token);
            isError(t, r, status, error, message || undefined);
            t.notOk(JSON.stringify(r.body).includes(root[1]!.value), 'no value in the refusal');
          }
        });
      }
      t.test('an unknown project is a 404 before any 403', async (t) =>
        isError(t, await api(svc, 'GET', '/api/v1/projects/00000000-0000-4000-8000-000000000000/export?environment=prod', refused[3]![1]), 404, 'NotFound', /Project with ID/));
      t.test('refused exports are not recorded', async (t) => t.same({ ...(await snapshot(svc)), exports: await exports() }, after));
    });

    t.test('bad input: a 4xx JSON answer, nothing recorded', async (t) => {
      const before = { ...(await snapshot(svc)), exports: await exports() };
      const cases: Array<[string, string, string, number, string?]> = [
        ['no environment', P, 'format=json', 422, 'ValidationFailure'],
        ['an empty environment', P, 'environment=&format=csv', 422, 'ValidationFailure'],
        ['an unknown format', P, 'environment=prod&format=xml', 422, 'ValidationFailure'],
        ['format in capitals', P, 'environment=prod&format=CSV', 422, 'ValidationFailure'],
        ['an unknown environment', P, 'environment=qa', 404, 'NotFound'],
        ['a NUL environment', P, 'environment=prod%00', 404, 'NotFound'],
        ['an environment too long', P, `environment=${'e'.repeat(65)}`, 422, 'ValidationFailure'],
        ['an unknown folder', P, 'environment=prod&secretPath=%2Fnope', 404, 'SecretPathNotFound'],
        ['path traversal', P, 'environment=prod&secretPath=%2Fapp%2F..%2F..', 422, 'ValidationFailure'],
        ['a relative path', P, 'environment=prod&secretPath=app', 422, 'ValidationFailure'],
        ['a path too long', P, `environment=prod&secretPath=%2F${'a'.repeat(1100)}`, 422, 'ValidationFailure'],
        ['a malformed project id', 'not-a-uuid', 'environment=prod', 404, 'NotFound'],
        ['an injection as project id', encodeURIComponent("' or 1=1 --"), 'environment=prod', 404, 'NotFound'],
        ['a slug as project id', project.slug, 'environment=prod', 404, 'NotFound'],
        ['an unknown project', '00000000-0000-4000-8000-000000000000', 'environment=prod', 404, 'NotFound'],
        ['a NUL project id', '%00', 'environment=prod', 404, 'NotFound'],
      ];
      for (const [name, p, q, status, error] of cases) {
        t.test(name, async (t) => isError(t, await api(svc, 'GET', `/api/v1/projects/${p}/export?${q}`, as), status, error));
      }
      t.test('nothing recorded', async (t) => t.same({ ...(await snapshot(svc)), exports: await exports() }, before));
    });
  });
}
