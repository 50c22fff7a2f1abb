// The audit trail over HTTP: machine logins are recorded (failed ones are not), the list
// is newest first, filtered and paged, for admins only; verify (with the real audit key)
// names an edited or a removed entry, the newest ones included, and an edited anchor.
import t from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { auditIds, rechainWithSha256, restoreTrail, saveTrail } from '../../helpers/audit.js';
import { request } from '../../helpers/http.js';
import { BACKENDS, INVENTORY, login, seedHomelab, startTestService, testEnv } from '../../helpers/service.js';
import { api, isError, machine, plainUser, superadmin } from './helpers.js';

const LOGS = '/api/v1/organization/audit-logs';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

for (const backend of BACKENDS) {
  t.test(`audit trail (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend, { LOGIN_MAX_ATTEMPTS: '50' }));
    const admin = await superadmin(svc);
    const as = admin.token;
    const seeded = await seedHomelab(svc.services);
    const P = seeded.projectId;
    const Q = (await svc.services.projects.create(SYSTEM, { name: 'other' })).id;
    const sql = svc.services.store.sql;
    const count = async () => (await sql<{ n: number }[]>`select count(*)::int as n from audit_log`)[0]!.n;
    const logs = (q: string, token = as) => api(svc, 'GET', `${LOGS}${q ? `?${q}` : ''}`, token);

    t.test('a machine login is recorded in its transaction; failed logins are not', async (t) => {
      const before = await count();
      await login(svc.url, seeded);
      t.equal(await count(), before + 1, 'one entry per successful login');
      const [row] = await sql`select * from audit_log order by id desc limit 1`;
      t.match(row, { actorType: 'identity', actorId: seeded.identityId, eventType: 'login-identity-universal-auth' });
      t.match(row!.metadata, { identityId: seeded.identityId, clientId: seeded.clientId, clientSecretId: String, accessTokenId: String });
      t.notOk(JSON.stringify(row).includes(seeded.clientSecret), 'never the secret');
      const [token] = await sql`select id from identity_access_tokens where id = ${row!.metadata.accessTokenId}`;
      t.ok(token, 'the entry names the token issued with it');

      const attempt = (body: unknown) => request(`${svc.url}/api/v1/auth/universal-auth/login`, { method: 'POST', json: body });
      const failures = async () => (await sql`select coalesce(sum(failed_logins), 0)::int as failed_logins from identity_login_failures where identity_id = ${seeded.identityId}`)[0]!.failedLogins;
      const f0 = await failures();
      const n0 = await count();
      isError(t, await attempt({ clientId: seeded.clientId, clientSecret: 'f'.repeat(64) }), 401, 'UnauthorizedError');
      isError(t, await attempt({ clientId: '00000000-0000-4000-8000-000000000000', clientSecret: 'f'.repeat(64) }), 401);
      isError(t, await attempt({ clientId: 'x', clientSecret: 'y' }), 401);
      t.equal(await count(), n0, 'failed logins write no audit entry');
      t.equal(await failures(), f0 + 1, 'they count towards the lockout instead');

      const listed = await logs(`eventType=login-identity-universal-auth&actor=${seeded.identityId}`);
      t.equal(listed.status, 200);
      t.equal(listed.body.auditLogs.length, 1);
      t.match(listed.body.auditLogs[0], {
        id: String,
        event: { type: 'login-identity-universal-auth', metadata: { identityId: seeded.identityId, clientId: seeded.clientId } },
        actor: { type: 'identity', metadata: { identityId: seeded.identityId, name: 'homelab-eso' } },
        projectId: null,
        createdAt: ISO,
      });
    });

    t.test('entries: newest first, Infisical-shaped, with the secret location and never a value', async (t) => {
      const r = await logs('limit=100');
      t.equal(r.status, 200);
      const entries: any[] = r.body.auditLogs;
      t.ok(entries.length > 20);
      const ids = entries.map((e) => Number(e.id));
      t.same(ids, [...ids].sort((a, b) => b - a), 'newest first');
      t.equal((await logs('')).body.auditLogs.length, 20, 'limit defaults to 20');
      const created = entries.find((e) => e.event.type === 'create-secret' && e.event.metadata.secretKey === 'GATEWAY_TOKEN');
      t.match(created, {
        event: { type: 'create-secret', metadata: { environment: 'prod', secretPath: '/', secretKey: 'GATEWAY_TOKEN', secretVersion: 1 } },
        actor: { type: 'platform' },
        projectId: P,
      });
      const signup = entries.find((e) => e.event.type === 'admin-signup');
      t.match(signup.actor, { type: 'user', metadata: { userId: admin.userId, email: 'admin@example.test' } });
      t.type(signup.ipAddress, 'string', 'the address of the request');
      const text = JSON.stringify(entries);
      for (const value of Object.values(INVENTORY)) t.notOk(text.includes(JSON.stringify(value).slice(1, -1)), 'no value in the trail');
    });

    t.test('filters and paging', async (t) => {
      const all = (await logs('limit=100')).body.auditLogs as any[];
      const p1 = (await logs('limit=5')).body.auditLogs as any[];
      const p2 = (await logs('limit=5&offset=5')).body.auditLogs as any[];
      t.same(p1.map((e) => e.id), all.slice(0, 5).map((e) => e.id), 'first page');
      t.same(p2.map((e) => e.id), all.slice(5, 10).map((e) => e.id), 'second page');
      t.same((await logs('offset=100000')).body.auditLogs, [], 'past the end: empty');

      const secrets = (await logs(`projectId=${P}&environment=prod&secretPath=%2F&eventType=create-secret&limit=100`)).body.auditLogs as any[];
      t.equal(secrets.length, Object.keys(INVENTORY).length, 'one creation per inventory secret');
      t.same(new Set(secrets.map((e) => e.event.metadata.secretKey)), new Set(Object.keys(INVENTORY)));
      t.equal((await logs(`projectId=${P}&environment=prod&secretPath=%2F&eventType=create-secret&limit=3`)).body.auditLogs.length, 3);
      t.same((await logs(`projectId=${P}&environment=dev&eventType=create-secret`)).body.auditLogs, []);
      t.same((await logs(`projectId=${P}&secretPath=%2Fnope`)).body.auditLogs, []);
      t.same((await logs(`projectId=${Q}&eventType=create-secret`)).body.auditLogs, [], 'another project');
      t.equal((await logs(`projectId=${P}&secretPath=%2F&eventType=create-secret`)).body.auditLogs.length, 14);
      t.equal((await logs(`projectId=${P}&secretPath=%2Fa%2F%2Fb`)).status, 422, 'odd paths are refused');

      const byType = async (type: string) => (await logs(`actorType=${type}&limit=100`)).body.auditLogs as any[];
      for (const type of ['user', 'identity', 'platform']) {
        const list = await byType(type);
        t.ok(list.length > 0 && list.every((e) => e.actor.type === type), `actorType=${type}`);
      }
      t.same((await byType('system')).map((e) => e.id), (await byType('platform')).map((e) => e.id), 'system is an alias of platform');
      const byActor = (await logs(`actor=${admin.userId}&limit=100`)).body.auditLogs as any[];
      t.ok(byActor.length > 0 && byActor.every((e) => e.actor.metadata.userId === admin.userId), 'actor=<id>');

      const latest = all[0];
      const at = new Date(latest.createdAt);
      const window = await logs(`startDate=${encodeURIComponent(latest.createdAt)}&endDate=${encodeURIComponent(latest.createdAt)}&limit=100`);
      t.ok(window.body.auditLogs.some((e: any) => e.id === latest.id), 'a window of one millisecond holds the entry');
      t.same((await logs(`startDate=${new Date(at.getTime() + 60_000).toISOString()}`)).body.auditLogs, [], 'nothing after the future');
      t.same((await logs('endDate=2000-01-01')).body.auditLogs, [], 'nothing before 2000');
      t.equal((await logs('startDate=2000-01-01&limit=100')).body.auditLogs.length, all.length, 'a date alone is a day');
    });

    t.test('bad query: 422, never a 500', async (t) => {
      for (const q of [
        'limit=0', 'limit=1001', 'limit=-1', 'limit=ten', 'limit=1.5', 'offset=-1', 'offset=x', 'offset=99999999999',
        'projectId=nope', "projectId=1'%20or%20'1'='1", 'actorType=robot', 'startDate=yesterday', 'endDate=2024-13-45',
        'startDate=2024-02-01&endDate=2024-01-01', 'secretPath=relative', 'secretPath=%2F..%2Fetc',
        `eventType=${'e'.repeat(200)}`, `actor=${'a'.repeat(200)}`,
      ]) {
        isError(t, await logs(q), 422, 'ValidationFailure', undefined);
      }
      t.equal((await logs('limit=&offset=&projectId=&unknown=1')).status, 200, 'empty values are absent; unknown parameters tolerated');
      const most = await logs('limit=1000');
      t.equal(most.status, 200, 'limit up to 1000, as Infisical');
      t.equal(most.body.auditLogs.length, (await logs('limit=999')).body.auditLogs.length, 'and answered');
    });

    t.test('who may read the trail', async (t) => {
      const pAdmin = await machine(svc, 'p-admin', [[P, 'admin']]);
      const pMember = await machine(svc, 'p-member', [[P, 'member']]);
      const pViewer = await machine(svc, 'p-viewer', [[P, 'viewer']]);
      const qAdmin = await machine(svc, 'q-admin', [[Q, 'admin']]);
      const stranger = await machine(svc, 'stranger');
      const person = await plainUser(svc, 'pat@example.test');

      const mine = await logs(`projectId=${P}&limit=100`, pAdmin.token);
      t.equal(mine.status, 200, 'a project admin lists its project');
      t.ok(mine.body.auditLogs.length > 0 && mine.body.auditLogs.every((e: any) => e.projectId === P), 'and only its project');
      t.equal((await logs(`projectId=${P.toUpperCase()}`, pAdmin.token)).status, 200);
      isError(t, await logs('', pAdmin.token), 403, 'PermissionDenied', /projectId/);
      // Not a member: as a missing project.
      isError(t, await logs(`projectId=${Q}`, pAdmin.token), 404, 'NotFound', `Project with ID '${Q}' not found`);
      isError(t, await logs(`projectId=${P}`, qAdmin.token), 404, 'NotFound', `Project with ID '${P}' not found`);
      t.equal((await logs(`projectId=${Q}`, qAdmin.token)).status, 200);
      for (const [who, token] of [['member', pMember.token], ['viewer', pViewer.token], ['stranger', stranger.token], ['person', person.token]] as const) {
        if (who === 'stranger' || who === 'person') isError(t, await logs(`projectId=${P}`, token), 404, 'NotFound', `Project with ID '${P}' not found`);
        else isError(t, await logs(`projectId=${P}`, token), 403, 'PermissionDenied', undefined);
        isError(t, await logs('', token), 403, 'PermissionDenied', undefined);
        t.pass(who);
      }
      isError(t, await logs('projectId=5d1f7c4e-0000-4000-8000-000000000000', pAdmin.token), 404, 'NotFound');
      isError(t, await logs('', ''), 401, 'UnauthorizedError', 'Token missing');
      t.equal((await logs(`projectId=${Q}`)).status, 200, 'the superadmin lists any project');

      for (const token of [pAdmin.token, pMember.token, person.token]) {
        isError(t, await api(svc, 'GET', `${LOGS}/verify`, token), 403, 'PermissionDenied');
        isError(t, await api(svc, 'POST', `${LOGS}/verify`, token), 403, 'PermissionDenied', undefined);
      }
      isError(t, await api(svc, 'GET', `${LOGS}/verify`), 401, 'UnauthorizedError');
      isError(t, await api(svc, 'POST', `${LOGS}/verify`), 401, 'UnauthorizedError');
      isError(t, await api(svc, 'POST', `${LOGS}/verify`, as, { full: true }), 422, undefined, undefined);
    });

    // Each check asks for a full walk (POST: 202 with its run id), awaits that run's end
    // (the verifier's promise, no sleep), then reads the verdict: the incremental walk's
    // beside the full walk's, broken if either is. The verdict's own fields are compared
    // below; the walks' details (times, progress) are checked here.
    const verify = async () => {
      const started = await api(svc, 'POST', `${LOGS}/verify`, as);
      if (started.status !== 202) throw new Error(`a full walk was not started: ${started.status} ${JSON.stringify(started.body)}`);
      const runId = (started.body as { runId: string }).runId;
      const outcome = await svc.services.auditVerifier.finished(runId);
      if (!outcome || outcome.stopped) throw new Error(`full walk ${runId} did not finish`);
      const r = await api(svc, 'GET', `${LOGS}/verify`, as);
      if (r.status !== 200) throw new Error(`verify answered ${r.status}: ${JSON.stringify(r.body)}`);
      const { checkedAt, ageSeconds, inProgress, verifiedFrom, incremental, fullWalk, ...verdict } = r.body as Record<string, unknown> & {
        fullWalk: { last: { runId: string; ok: boolean } | null };
        incremental: { ok: boolean | null };
      };
      if (fullWalk.last?.runId !== runId) throw new Error(`the verdict is not that of full walk ${runId}: ${JSON.stringify(fullWalk)}`);
      if (typeof checkedAt !== 'string' || typeof ageSeconds !== 'number' || typeof inProgress !== 'boolean' || typeof verifiedFrom !== 'number') {
        throw new Error(`freshness missing: ${JSON.stringify(r.body)}`);
      }
      if ((verdict.ok === true) !== (fullWalk.last.ok && incremental.ok === true)) throw new Error(`ok only when both walks are: ${JSON.stringify(r.body)}`);
      return verdict;
    };
    const secretCount = async () => (await sql<{ n: number }[]>`select count(*)::int as n from secrets`)[0]!.n;

    t.test('verify: ok, with the head to record out of band', async (t) => {
      const n = await count();
      const [last] = await sql<{ id: number; hash: Buffer }[]>`select id, hash from audit_log order by id desc limit 1`;
      t.same(await verify(), {
        ok: true,
        entries: n,
        head: { entries: n, legacyEntries: 0, lastId: last!.id, mac: last!.hash.toString('hex').slice(0, 16) },
      });
      await saveTrail(sql, 'api');
    });

    t.test('verify names an edited entry, also one re-hashed with plain SHA-256', async (t) => {
      const ids = await auditIds(sql);
      const middle = ids[Math.floor(ids.length / 2)]!;
      await sql`update audit_log set event_type = 'x' where id = ${middle}`;
      t.same(await verify(), { ok: false, entries: ids.length, brokenAt: middle, reason: 'entry' }, 'an edited row is named');
      await restoreTrail(sql, 'api');
      t.match(await verify(), { ok: true, entries: ids.length }, 'and the chain holds again once restored');

      await sql`update audit_log set metadata = metadata || '{"role":"admin"}'::jsonb where id = ${ids[1]!}`;
      t.equal((await verify()).brokenAt, ids[1], 'edited metadata is named too');
      await restoreTrail(sql, 'api');

      await sql`update audit_log set secret_key = 'SOMETHING_ELSE' where id = ${ids[3]!}`;
      await rechainWithSha256(sql, ids[3]!);
      t.same(await verify(), { ok: false, entries: ids.length, brokenAt: ids[3], reason: 'entry' }, 'every later hash recomputed: still named');
      await restoreTrail(sql, 'api');
    });

    t.test('verify names a deleted entry: in the middle, and the newest ones', async (t) => {
      const ids = await auditIds(sql);
      await sql`delete from audit_log where id = ${ids[ids.length - 5]!}`;
      t.same(await verify(), { ok: false, brokenAt: ids[ids.length - 4], entries: ids.length - 1, reason: 'entry' }, 'in the middle: the next entry');
      await restoreTrail(sql, 'api');
      for (const k of [1, 3]) {
        await sql`delete from audit_log where id in ${sql(ids.slice(-k))}`;
        t.same(
          await verify(),
          {
            ok: false,
            entries: ids.length - k,
            brokenAt: null,
            reason: 'head-mismatch',
            anchored: { entries: ids.length, lastId: ids.at(-1) },
            found: { entries: ids.length - k, lastId: ids.at(-k - 1) },
          },
          `the newest ${k}: the anchor does not match`,
        );
        await restoreTrail(sql, 'api');
      }
      t.match(await verify(), { ok: true });
    });

    t.test('an edited anchor: verify says so, and writes fail closed', async (t) => {
      const ids = await auditIds(sql);
      await sql`update audit_chain_head set entries = entries - 1`;
      t.match(await verify(), { ok: false, entries: ids.length, brokenAt: null, reason: 'head-mismatch' });
      const secrets = await secretCount();
      const write = await api(svc, 'POST', '/api/v4/secrets/NOT_AUDITED', as, { projectId: P, environment: 'prod', secretPath: '/', secretValue: 'v' });
      t.equal(write.status, 500, 'a change that cannot be audited does not happen');
      t.equal(await secretCount(), secrets, 'nothing written');
      t.same(await auditIds(sql), ids);
      await restoreTrail(sql, 'api');
      t.match(await verify(), { ok: true });
    });

    t.test('concurrent writes and logins append to one chain', async (t) => {
      const before = await count();
      const writes = await Promise.all([
        ...Array.from({ length: 8 }, (_, i) =>
          api(svc, 'POST', `/api/v4/secrets/CONCURRENT_${i}`, as, { projectId: P, environment: 'prod', secretPath: '/', secretValue: `v${i}` }),
        ),
        ...Array.from({ length: 4 }, () => login(svc.url, seeded).then(() => ({ status: 200 }))),
      ]);
      t.same(writes.map((w) => w.status), Array(12).fill(200), 'every write succeeded');
      t.equal(await count(), before + 12);
      t.match(await verify(), { ok: true, entries: before + 12, head: { entries: before + 12 } });
    });
  });
}
