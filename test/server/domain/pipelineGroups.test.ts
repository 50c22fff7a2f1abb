// Group commit on the real databases: machine logins and revocations arriving together
// share transactions, yet each is its own change: every login answered 200 has its token
// row and its own audit entry, the chain verifies; a change that fails in a group (a
// thrown error, a failed SQL statement) gets its own error and writes nothing, and the
// others commit.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { request } from '../../helpers/http.js';
import { BACKENDS, seedHomelab, startTestService, testEnv } from '../../helpers/service.js';

const LOGIN = '/api/v1/auth/universal-auth/login';
const REVOKE = '/api/v1/auth/token/revoke';
const RAW = '/api/v3/secrets/raw?workspaceSlug=homelab&environment=prod&secretPath=/';

for (const backend of BACKENDS) {
  t.test(`60 logins and 5 wrong guesses together, then 60 revocations together (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend, { LOGIN_MAX_ATTEMPTS: '100' }));
    const seeded = await seedHomelab(svc.services);
    const { sql } = svc.services.store;
    const before = (await sql<{ before: number }[]>`select coalesce(max(id), 0)::int as before from audit_log`)[0]!.before;

    const attempts = await Promise.all(
      Array.from({ length: 65 }, (_, i) =>
        request(`${svc.url}${LOGIN}`, { method: 'POST', json: { clientId: seeded.clientId, clientSecret: i % 13 === 5 ? 'f'.repeat(64) : seeded.clientSecret } }),
      ),
    );
    const ok = attempts.filter((r) => r.status === 200);
    t.equal(ok.length, 60, '60 right secrets: 200');
    t.same(attempts.filter((r) => r.status !== 200).map((r) => r.status), Array(5).fill(401), '5 wrong ones: 401');
    const tokens = ok.map((r) => r.body.accessToken as string);
    for (const token of tokens) t.equal((await request(`${svc.url}${RAW}`, { token })).status, 200);

    const logins = await sql<{ at: Date; tokenId: string }[]>`select at, metadata->>'accessTokenId' as token_id from audit_log
      where id > ${before} and event_type = 'login-identity-universal-auth'`;
    t.equal(logins.length, 60, 'one entry per login');
    t.equal(new Set(logins.map((l) => l.tokenId)).size, 60, 'each naming its own token');
    const rows = await sql`select id from identity_access_tokens where id = any(${logins.map((l) => l.tokenId)}::uuid[])`;
    t.equal(rows.length, 60, 'every entry names a token row that committed with it');
    const groups = new Set(logins.map((l) => l.at.getTime())).size;
    t.ok(groups < 60, `logins arriving together shared transactions (${groups} groups for 60 logins)`);
    const [ua] = await sql<{ failedLogins: number }[]>`select coalesce(sum(failed_logins), 0)::int as failed_logins from identity_login_failures where identity_id = ${seeded.identityId}`;
    t.ok(ua!.failedLogins <= 5, 'failures were counted and cleared as in single commits');

    const revoked = await Promise.all(tokens.map((accessToken) => request(`${svc.url}${REVOKE}`, { method: 'POST', json: { accessToken } })));
    t.same(revoked.map((r) => r.status), Array(60).fill(200));
    for (const token of tokens) t.equal((await request(`${svc.url}${RAW}`, { token })).status, 401, 'a revoked token is refused');
    const revokes = (await sql<{ revokes: number }[]>`select count(*)::int as revokes from audit_log where id > ${before} and event_type = 'revoke-identity-access-token'`)[0]!.revokes;
    t.equal(revokes, 60, 'one entry per revocation');
    t.match(await svc.services.store.audit.verify(), { ok: true }, 'the chain verifies');
  });

  t.test(`a change that fails inside a group writes nothing; the others commit (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend));
    const seeded = await seedHomelab(svc.services);
    const { changes, store } = svc.services;
    const actor = { actorType: 'identity' as const, actorId: seeded.identityId };
    const ids = [randomUUID(), randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const token = (id: string) => ({
      id,
      secretHash: Buffer.alloc(32),
      identityId: seeded.identityId,
      clientSecretId: null,
      authMethod: 'jwt-auth' as const,
      expiresAt: new Date(Date.now() + 60_000),
      maxExpiresAt: new Date(Date.now() + 60_000),
    });
    const write = (id: string, fail?: 'throw' | 'sql') =>
      changes.groupedByCaller(actor, {}, 'group test').run(async ({ s, audit }) => {
        if (id === ids[0]) await held;
        await s.identities.insertAccessToken(token(id));
        await audit({ eventType: 'group-test', metadata: { id } });
        if (fail === 'throw') throw new Error('refused by the change');
        if (fail === 'sql') await s.tx`select 1 / 0`;
        return id;
      });
    // The first holds its group open; the next four queue and commit as one group.
    const first = write(ids[0]!);
    const rest = [write(ids[1]!), write(ids[2]!, 'throw'), write(ids[3]!, 'sql'), write(ids[4]!)];
    release();
    const settled = await Promise.allSettled([first, ...rest]);
    t.same(settled.map((r) => r.status), ['fulfilled', 'fulfilled', 'rejected', 'rejected', 'fulfilled'], String(settled.map((r) => (r.status === 'rejected' ? r.reason : '')).join(' / ')));
    t.match(settled[2], { reason: { message: 'refused by the change' } });
    t.match(settled[3], { reason: { code: '22012' } }, 'the SQL error is the change\'s own');
    const rows = await store.sql<{ id: string }[]>`select id from identity_access_tokens where id = any(${ids}::uuid[])`;
    t.same(rows.map((r) => r.id).sort(), [ids[0], ids[1], ids[4]].sort(), 'the failed changes wrote nothing');
    const entries = (await store.sql<{ changeId: string; at: Date }[]>`select metadata->>'id' as change_id, at from audit_log where event_type = 'group-test' order by audit_log.id`).map((e) => ({ id: e.changeId, at: e.at }));
    t.same(entries.map((e) => e.id), [ids[0], ids[1], ids[4]], 'their entries are gone with them; the others in order');
    t.match(await store.audit.verify(), { ok: true }, 'the chain verifies');
  });
}
