// The access-token sweep: rows revoked or expired more than a day ago are deleted (one
// row per login would pile up forever), at start and periodically, one replica at a
// time; a revoked token stays refused once its row is gone. And the login claim: a
// secret is compared only for a claimed attempt, in the claim's own statement.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { startService } from '../../server/app.js';
import { parseConfig } from '../../server/config.js';
import { sweepAccessTokens } from '../../storage/identities.js';
import { ESO_LIST_QUERY, request } from '../helpers/http.js';
import { BACKENDS, login, quietLog, seedHomelab, startTestService, testEnv } from '../helpers/service.js';
import { textLogger } from '../../server/log.js';

const DAY = 24 * 3600;

const tokenId = (jwt: string): string => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()).jti;

for (const backend of BACKENDS) {
  t.test(`access-token sweep (${backend})`, async (t) => {
    const env = await testEnv(t, backend);
    const first = await startService(parseConfig(env), quietLog);
    let url = `http://127.0.0.1:${first.port}`;
    const seeded = await seedHomelab(first.services);
    const [revokedLongAgo, expiredLongAgo, revokedRecently, expiredRecently, live, usedUp] = await Promise.all(
      [1, 2, 3, 4, 5, 6].map(() => login(url, seeded)),
    );
    for (const token of [revokedLongAgo!, revokedRecently!]) {
      const r = await request(`${url}/api/v1/auth/token/revoke`, { method: 'POST', json: { accessToken: token } });
      t.equal(r.status, 200);
    }
    // Time passes: move the rows' dates back (the JWTs themselves stay unexpired).
    const sql = first.services.store.sql;
    await sql`update identity_access_tokens set revoked_at = now() - interval '25 hours' where id = ${tokenId(revokedLongAgo!)}`;
    await sql`update identity_access_tokens set expires_at = now() - interval '25 hours' where id = ${tokenId(expiredLongAgo!)}`;
    await sql`update identity_access_tokens set expires_at = now() - interval '1 hour' where id = ${tokenId(expiredRecently!)}`;
    // A token with a use limit, used up: never accepted again.
    await sql`update identity_access_tokens set num_uses_limit = 2, num_uses = 2 where id = ${tokenId(usedUp!)}`;
    await first.close();

    // A new start sweeps at once.
    let sweptLine!: (line: string) => void;
    const swept = new Promise<string>((resolve) => (sweptLine = resolve));
    const svc = await startService(parseConfig(env), textLogger({ error: (m) => console.error(m), info: (m) => /^access tokens:/.test(m) && sweptLine(m) }, { fields: false }));
    t.teardown(() => svc.close());
    const services = svc.services;
    url = `http://127.0.0.1:${svc.port}`;
    t.equal(await swept, 'access tokens: deleted 4 revoked, expired or used up', 'counts only');
    const remaining = await services.store.sql<{ id: string }[]>`select id from identity_access_tokens order by id`;
    t.same(
      remaining.map((r) => r.id),
      [revokedRecently!, live!].map(tokenId).sort(),
      'the live row stays, and one revoked within 10 minutes (a retried revoke is answered 200); expired and used-up ones go',
    );

    const read = (token: string) => request(`${url}/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { token });
    for (const [name, token] of [['revoked', revokedLongAgo!], ['expired', expiredLongAgo!]] as const) {
      const r = await read(token);
      t.equal(r.status, 401, `a ${name} token whose row was swept stays refused`);
      t.equal(r.body.error, 'TokenError');
      const renewed = await request(`${url}/api/v1/auth/token/renew`, { method: 'POST', json: { accessToken: token } });
      t.equal(renewed.status, 401, `and cannot be renewed (${name})`);
    }
    // A retry of a revoke (ESO's) comes within seconds, while the row is kept: answered 200
    // (test/server/redis-outage.test.ts). Once swept, nothing shows the token was ever
    // this holder's (its secret part's hash went with the row): refused like its use.
    const again = await request(`${url}/api/v1/auth/token/revoke`, { method: 'POST', json: { accessToken: revokedLongAgo } });
    t.equal(again.status, 401, 'revoking a swept token is refused like its use');
    const retried = await request(`${url}/api/v1/auth/token/revoke`, { method: 'POST', json: { accessToken: revokedRecently } });
    t.equal(retried.status, 200, 'revoking a token revoked within the day is answered 200 (ESO retries)');
    t.equal((await read(live!)).status, 200, 'a live token is untouched');
    t.equal((await read(revokedRecently!)).status, 401);

    // Two sweepers at once (two replicas) delete each row once; batches add up.
    const [a, b] = [await login(url, seeded), await login(url, seeded)];
    await services.store.sql`update identity_access_tokens set expires_at = now() - interval '2 days' where id in (${tokenId(a)}, ${tokenId(b)})`;
    const counts = await Promise.all([
      sweepAccessTokens(services.store.sql, { graceSeconds: DAY, batchSize: 1 }),
      sweepAccessTokens(services.store.sql, { graceSeconds: DAY, batchSize: 1 }),
    ]);
    t.equal(counts[0]! + counts[1]!, 2, `each row deleted once (${counts.join(' + ')})`);
    t.equal(await sweepAccessTokens(services.store.sql, { graceSeconds: DAY }), 0, 'nothing left to sweep');
    t.equal((await read(live!)).status, 200);
  });
}

for (const backend of BACKENDS) {
  t.test(`claimLogin: the secret is compared only once the attempt is claimed (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend));
    const { store, keyring } = svc.services;
    const seeded = await seedHomelab(svc.services);
    const right = await keyring.macCurrent(seeded.clientSecret);
    const wrong = await keyring.macCurrent('f'.repeat(64));
    const start = Date.parse('2026-11-26T00:00:00Z');
    // Rows of the client secrets' table read during the claim (by index or sequentially):
    // this backend's counts not yet reported, which only grow within a transaction.
    const claim = (presented: typeof right, at: number) =>
      store.transaction(async (s) => {
        const rowsRead = async () =>
          (await s.tx<{ n: number }[]>`select (coalesce(sum(seq_tup_read), 0) + coalesce(sum(idx_tup_fetch), 0))::int as n
            from pg_stat_xact_user_tables where relname = 'identity_client_secrets'`)[0]!.n;
        const before = await rowsRead();
        const result = await s.identities.claimLogin(seeded.identityId, 'test', 3, 300, new Date(at), presented, { id: randomUUID(), secretHash: Buffer.alloc(32) });
        return { result, secretReads: (await rowsRead()) - before };
      });
    const failedLogins = async () =>
      (await store.sql<{ failedLogins: number }[]>`select coalesce(sum(failed_logins), 0)::int as failed_logins from identity_login_failures where identity_id = ${seeded.identityId}`)[0]!.failedLogins;

    for (let i = 0; i < 3; i++) {
      const { result, secretReads } = await claim(wrong, start + i);
      t.same(result, { claimed: true, ua: result?.claimed && result.ua, matchedSecretId: undefined, undecided: false, issued: false }, `wrong guess ${i + 1}: claimed, no match`);
      t.ok(secretReads > 0, 'a claimed attempt reads the secrets it is compared with');
    }
    t.equal(await failedLogins(), 3);
    const locked = await claim(right, start + 10);
    t.same(locked.result, { claimed: false, retryAfterSeconds: 300 }, 'the right secret is refused while locked');
    t.equal(locked.secretReads, 0, 'and is compared with nothing: not one client secret row was read');
    t.equal(await failedLogins(), 3, 'the count stays');

    const after = await claim(right, start + 2 + 300_000);
    t.ok(after.result?.claimed && after.result.matchedSecretId !== undefined && after.result.issued, 'once the window has passed, the right secret matches and its token is issued');
    t.equal(await failedLogins(), 0, 'a match clears the count in the claim itself');
    const [secret] = await store.sql<{ numUses: number }[]>`select num_uses from identity_client_secrets where identity_id = ${seeded.identityId}`;
    t.equal(secret!.numUses, 1, 'and counts a use of the secret');
    const tokens = await store.sql<{ expiresAt: Date }[]>`select expires_at from identity_access_tokens where identity_id = ${seeded.identityId}`;
    t.equal(tokens.length, 1, 'one token row: the locked and the wrong attempts issued none');
    t.equal(tokens[0]!.expiresAt.getTime(), start + 2 + 300_000 + 2_592_000_000, 'expiring by the TTL from the claim\'s time');
  });
}

t.test('claimLogin: a secret revoked while the claim waits for its row issues no token (postgres)', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const { store, keyring } = svc.services;
  const seeded = await seedHomelab(svc.services);
  const right = await keyring.macCurrent(seeded.clientSecret);
  const [secret] = await store.identities.usableClientSecrets(seeded.identityId);
  const tokenId = randomUUID();

  // The revocation holds the secret's row, uncommitted, while the claim runs.
  let commitRevocation!: () => void;
  const revocationMayCommit = new Promise<void>((resolve) => (commitRevocation = resolve));
  let revoked!: () => void;
  const rowHeld = new Promise<void>((resolve) => (revoked = resolve));
  const revocation = store.transaction(async (s) => {
    await s.tx`update identity_client_secrets set is_revoked = true where id = ${secret!.id}`;
    revoked();
    await revocationMayCommit;
  });
  await rowHeld;
  const claim = store.transaction((s) => s.identities.claimLogin(seeded.identityId, 'test', 3, 300, new Date(), right, { id: tokenId, secretHash: Buffer.alloc(32) }));
  let settled = false;
  void claim.finally(() => (settled = true));
  // The claim compared against the secret as last committed (a match), and now waits for
  // its row (if it ends instead, the assertions below say how).
  while (!settled) {
    const [w] = await store.sql<{ n: number }[]>`select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`;
    if (w!.n > 0) break;
  }
  commitRevocation();
  await revocation;
  const result = await claim;
  t.ok(result?.claimed && result.matchedSecretId === secret!.id, 'the claim matched the secret');
  t.ok(result?.claimed && result.issued === false, 'but issued nothing once the revocation committed');
  t.equal((await store.sql`select 1 from identity_access_tokens where id = ${tokenId}`).length, 0, 'no token row');
  const [uses] = await store.sql<{ numUses: number }[]>`select num_uses from identity_client_secrets where id = ${secret!.id}`;
  t.equal(uses!.numUses, 0, 'and no use counted');
});
