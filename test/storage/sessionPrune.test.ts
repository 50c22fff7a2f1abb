// Tokens leave the table (issue 31 point 4): after logins and revokes, a prune leaves
// only the live access tokens and sessions; what it deleted stays refused.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { sweepAccessTokens } from '../../storage/identities.js';
import { pruneUserSessions } from '../../storage/sessionPrune.js';
import { ESO_LIST_QUERY, request } from '../helpers/http.js';
import { login, seedHomelab, startTestService, testEnv } from '../helpers/service.js';

t.test('after N logins and revokes, the token tables hold only the live rows', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const url = `http://127.0.0.1:${svc.port}`;
  const sql = svc.services.store.sql;
  const seeded = await seedHomelab(svc.services);
  const tokens: string[] = [];
  for (let i = 0; i < 30; i++) tokens.push(await login(url, seeded));
  const revoked = tokens.slice(0, 25);
  for (const token of revoked) {
    const r = await request(`${url}/api/v1/auth/token/revoke`, { method: 'POST', json: { accessToken: token } });
    t.equal(r.status, 200);
  }
  const live = tokens.slice(25);
  const jti = (jwt: string): string => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()).jti;
  // One more expired a moment ago (its JWT unexpired): it goes too.
  await sql`update identity_access_tokens set expires_at = now() - interval '1 second' where id = ${jti(live[0]!)}`;

  // People's sessions: live, revoked (logout), expired.
  const userId = randomUUID();
  await sql`insert into users (id, email, password_hash) values (${userId}, ${`prune-${userId}@example.com`}, 'x')`;
  const sessions = Array.from({ length: 12 }, () => randomUUID());
  for (const [n, id] of sessions.entries()) {
    await svc.services.store.users.insertSession({ id, secretHash: Buffer.alloc(32), userId, expiresAt: new Date(Date.now() + (n < 4 ? -1000 : 3_600_000)), ip: null });
    if (n >= 4 && n < 8) await svc.services.store.users.revokeSession(id);
  }

  t.equal(await sweepAccessTokens(sql, { graceSeconds: 0, batchSize: 7 }), 26, 'the revoked and the expired access tokens, in batches');
  t.equal(await pruneUserSessions(sql, { batchSize: 3 }), 8, 'the revoked and the expired sessions, in batches');
  const tokenRows = (await sql<{ id: string }[]>`select id from identity_access_tokens order by id`).map((r) => r.id);
  t.same(tokenRows, live.slice(1).map(jti).sort(), 'only live access tokens are left');
  const sessionRows = (await sql<{ id: string }[]>`select id from user_sessions order by id`).map((r) => r.id);
  t.same(sessionRows, sessions.slice(8).sort(), 'only live sessions are left');

  const read = (token: string) => request(`${url}/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { token });
  t.equal((await read(revoked[0]!)).status, 401, 'a deleted token stays refused');
  t.equal((await read(live[1]!)).status, 200, 'a live one is untouched');
  t.equal(await pruneUserSessions(sql), 0, 'nothing left');
});
