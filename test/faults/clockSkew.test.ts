// Replicas whose clocks disagree (issue 31, point 8): one replica an hour behind, one an
// hour ahead (libfaketime preloaded into the child processes: FAKETIME="-1h" / "+1h"),
// and this process's own replica on the real clock, all on one PostgreSQL and Redis.
// Everything time-bound follows the database's clock (storage/clock.ts), so a token
// issued on any replica works on every other for its whole TTL and expires on all of
// them at the same moment, and a lockout lasts its configured time whichever replica
// counts or checks it. Moments are read from the database (its now() against the rows'
// expiry), never from this process's clock or a sleep.
import { existsSync } from 'node:fs';
import postgres from 'postgres';
import t from 'tap';
import { SYSTEM } from '../../server/domain/access.js';
import { runMain, type MainProcess } from '../helpers/process.js';
import { seedHomelab, startTestService, testEnv } from '../helpers/service.js';

t.setTimeout(180_000);

const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
const TTL_SECONDS = 6;
const LOCKOUT_SECONDS = 6;

type Sql = ReturnType<typeof postgres>;

/** Resolves once the database's clock has reached `at` (polled: a condition, not a sleep). */
async function untilDatabaseTime(sql: Sql, at: Date): Promise<void> {
  for (;;) {
    const [row] = await sql<{ reached: boolean }[]>`select now() >= ${at}::timestamptz as reached`;
    if (row!.reached) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function read(url: string, token: string, projectId: string): Promise<number> {
  const r = await fetch(`${url}/api/v3/secrets/raw?workspaceId=${projectId}&environment=prod&secretPath=/`, { headers: { authorization: `Bearer ${token}` } });
  await r.arrayBuffer();
  return r.status;
}

async function login(url: string, clientId: string, clientSecret: string): Promise<{ status: number; token?: string; retryAfter?: string | null }> {
  const r = await fetch(`${url}/api/v1/auth/universal-auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientId, clientSecret }),
  });
  const body = (await r.json()) as { accessToken?: string };
  return { status: r.status, token: body.accessToken, retryAfter: r.headers.get('retry-after') };
}

t.test('replicas an hour apart share one clock: the database\'s', async (t) => {
  t.ok(existsSync(LIBFAKETIME), `libfaketime is installed (apt-get install faketime): ${LIBFAKETIME}`);
  if (!existsSync(LIBFAKETIME)) return;
  const env = await testEnv(t, 'postgres+redis', { LOGIN_MAX_ATTEMPTS: '2', LOGIN_LOCKOUT_SECONDS: String(LOCKOUT_SECONDS) });
  const local = await startTestService(t, env);
  const seeded = await seedHomelab(local.services);
  await local.services.identities.updateUniversalAuth(SYSTEM, seeded.identityId, { accessTokenTtl: TTL_SECONDS });
  const sql = postgres(env.DATABASE_URL!, { max: 1, onnotice: () => {} });
  t.teardown(() => sql.end());

  const skewed = (offset: string): MainProcess => {
    const p = runMain({ ...env, LD_PRELOAD: LIBFAKETIME, FAKETIME: offset, FAKETIME_DONT_FAKE_MONOTONIC: '1' });
    t.teardown(() => p.stop('SIGKILL'));
    return p;
  };
  const behindProcess = skewed('-1h');
  const aheadProcess = skewed('+1h');
  const replicas = { behind: await behindProcess.listening, ahead: await aheadProcess.listening, local: local.url };

  // The children's wall clocks really are an hour off (what the service logs at start).
  await behindProcess.output(/this host's clock is 36\d\d s behind the database's/);
  await aheadProcess.output(/this host's clock is 36\d\d s ahead of the database's/);

  for (const [issuer, url] of Object.entries(replicas)) {
    t.test(`a token issued on the ${issuer} replica`, async (t) => {
      const issued = await login(url, seeded.clientId, seeded.clientSecret);
      t.equal(issued.status, 200, 'login');
      const token = issued.token!;
      const [row] = await sql<{ expiresAt: Date; ttl: number }[]>`select expires_at as "expiresAt",
          extract(epoch from expires_at - now())::float8 as ttl
        from identity_access_tokens where identity_id = ${seeded.identityId} order by expires_at desc limit 1`;
      t.ok(row!.ttl > TTL_SECONDS - 2 && row!.ttl <= TTL_SECONDS + 0.5, `its row expires ${TTL_SECONDS} s after the database's now (${row!.ttl.toFixed(2)} s)`);
      for (const [name, other] of Object.entries(replicas)) t.equal(await read(other, token, seeded.projectId), 200, `works on the ${name} replica`);
      // Still within its TTL by the database's clock: it works everywhere.
      await untilDatabaseTime(sql, new Date(row!.expiresAt.getTime() - 1_500));
      for (const [name, other] of Object.entries(replicas)) t.equal(await read(other, token, seeded.projectId), 200, `works on the ${name} replica 1.5 s before its expiry`);
      // Past it by the database's clock: refused everywhere.
      await untilDatabaseTime(sql, new Date(row!.expiresAt.getTime() + 300));
      for (const [name, other] of Object.entries(replicas)) t.equal(await read(other, token, seeded.projectId), 401, `refused on the ${name} replica once expired`);
    });
  }

  t.test('a lockout lasts its time whichever replica counts and checks it', async (t) => {
    t.equal((await login(replicas.behind, seeded.clientId, 'wrong')).status, 401, 'a failure counted on the replica behind');
    t.equal((await login(replicas.ahead, seeded.clientId, 'wrong')).status, 401, 'a failure counted on the replica ahead');
    const [row] = await sql<{ lockedUntil: Date }[]>`select last_failed_login_at + make_interval(secs => ${LOCKOUT_SECONDS}) as "lockedUntil"
      from identity_login_failures where identity_id = ${seeded.identityId} and last_failed_login_at is not null`;
    t.ok(row, 'the failures are recorded');
    const [ahead] = await sql<{ seconds: number }[]>`select extract(epoch from ${row!.lockedUntil}::timestamptz - now())::float8 as seconds`;
    t.ok(ahead!.seconds > LOCKOUT_SECONDS - 2 && ahead!.seconds <= LOCKOUT_SECONDS + 0.5, `locked until ${LOCKOUT_SECONDS} s after the database's now (${ahead!.seconds.toFixed(2)} s)`);
    for (const [name, url] of Object.entries(replicas)) {
      const r = await login(url, seeded.clientId, seeded.clientSecret);
      t.equal(r.status, 429, `the right secret is refused while locked, on the ${name} replica`);
      t.ok(Number(r.retryAfter) >= 1 && Number(r.retryAfter) <= LOCKOUT_SECONDS, `Retry-After within the lockout (${r.retryAfter})`);
    }
    await untilDatabaseTime(sql, new Date(row!.lockedUntil.getTime() - 1_500));
    for (const [name, url] of Object.entries(replicas)) {
      t.equal((await login(url, seeded.clientId, seeded.clientSecret)).status, 429, `still locked 1.5 s before its end, on the ${name} replica`);
    }
    await untilDatabaseTime(sql, new Date(row!.lockedUntil.getTime() + 300));
    t.equal((await login(replicas.behind, seeded.clientId, seeded.clientSecret)).status, 200, 'over once its time has passed, on the replica behind');
    t.equal((await login(replicas.ahead, seeded.clientId, seeded.clientSecret)).status, 200, 'and on the replica ahead');
  });
});
