// Machine (Universal Auth) login lockout: an attempt is claimed before its secret is
// compared, so a parallel burst of wrong guesses gets at most LOGIN_MAX_ATTEMPTS answers
// other than 429; failures older than the lockout window stop counting; right logins in
// parallel are never locked out by each other, also when committed in one group.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { identityTokens } from '../../server/auth/tokens.js';
import { topics } from '../../server/domain/caches.js';
import { rekeyMacKey } from '../../server/domain/keyring.js';
import { machineAuth } from '../../server/domain/machineAuth.js';
import type { Change } from '../../server/domain/pipeline.js';
import { AppError } from '../../server/errors.js';
import { request } from '../helpers/http.js';
import { BACKENDS, seedHomelab, startTestService, testEnv, type TestService } from '../helpers/service.js';

const LOGIN = '/api/v1/auth/universal-auth/login';
const wrong = (i: number) => i.toString(16).padStart(64, 'f');

for (const backend of BACKENDS) {
  t.test(`60 parallel wrong guesses for one client id: 3 checked, 57 refused (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend, { LOGIN_MAX_ATTEMPTS: '3', LOGIN_LOCKOUT_SECONDS: '300' }));
    const seeded = await seedHomelab(svc.services);
    const guesses = await Promise.all(
      Array.from({ length: 60 }, (_, i) => request(`${svc.url}${LOGIN}`, { method: 'POST', json: { clientId: seeded.clientId, clientSecret: wrong(i) } })),
    );
    t.same(guesses.map((r) => r.status).sort(), [...Array(3).fill(401), ...Array(57).fill(429)], 'exactly 3 answered 401, 57 locked out');
    for (const g of guesses.filter((r) => r.status === 401)) t.equal(g.body.message, 'Invalid credentials');
    for (const g of guesses.filter((r) => r.status === 429)) {
      t.match(g.body.message, /^Too many failed login attempts; try again in \d+ seconds$/);
      t.ok(Number(g.headers.get('retry-after')) > 0 && Number(g.headers.get('retry-after')) <= 300, 'Retry-After within the window');
    }
    const right = await request(`${svc.url}${LOGIN}`, { method: 'POST', json: { clientId: seeded.clientId, clientSecret: seeded.clientSecret } });
    t.equal(right.status, 429, 'the right secret is refused while locked');
    const [row] = await svc.services.store.sql<{ failedLogins: number }[]>`select coalesce(sum(failed_logins), 0)::int as failed_logins from identity_login_failures where identity_id = ${seeded.identityId}`;
    t.equal(row!.failedLogins, 3, 'three failures counted');

    // The lock ends with the window (aged here); a success then clears the count.
    await svc.services.store.sql`update identity_login_failures set last_failed_login_at = now() - interval '301 seconds'`;
    const after = await request(`${svc.url}${LOGIN}`, { method: 'POST', json: { clientId: seeded.clientId, clientSecret: seeded.clientSecret } });
    t.equal(after.status, 200, 'the right secret once the window has passed');
    const [cleared] = await svc.services.store.sql<{ failedLogins: number }[]>`select coalesce(sum(failed_logins), 0)::int as failed_logins from identity_login_failures where identity_id = ${seeded.identityId}`;
    t.equal(cleared!.failedLogins, 0, 'a success clears the count');
  });
}

t.test("a stranger's guesses lock out only the stranger's source: ESO's logins from elsewhere go on", async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis', { LOGIN_MAX_ATTEMPTS: '3', TRUSTED_PROXIES: '127.0.0.1/32, ::1' }));
  const seeded = await seedHomelab(svc.services);
  const from = (address: string, clientSecret: string) =>
    request(`${svc.url}${LOGIN}`, { method: 'POST', json: { clientId: seeded.clientId, clientSecret }, headers: { 'x-forwarded-for': address } });
  const STRANGER = '203.0.113.66';
  const ESO = '10.0.0.5';
  const guesses = await Promise.all(Array.from({ length: 30 }, (_, i) => from(STRANGER, wrong(i))));
  t.same(guesses.map((r) => r.status).sort(), [...Array(3).fill(401), ...Array(27).fill(429)], "a parallel burst from one source: 3 compared, 27 refused");
  t.equal((await from(STRANGER, seeded.clientSecret)).status, 429, "the stranger's source is locked, even with the right secret");
  for (let i = 0; i < 5; i++) t.equal((await from(ESO, seeded.clientSecret)).status, 200, `ESO's login ${i + 1} from its own address`);
  const rows = await svc.services.store.sql<{ source: string; failedLogins: number }[]>`select source, failed_logins from identity_login_failures
    where identity_id = ${seeded.identityId} order by source`;
  t.same(rows.map((r) => [r.source, r.failedLogins]), [[ESO, 0], [STRANGER, 3]], 'counted per source');
  // One wrong guess from ESO's own address counts there, not against the stranger's count.
  t.equal((await from(ESO, wrong(99))).status, 401);
  t.equal((await from(ESO, seeded.clientSecret)).status, 200, 'a success clears its own source');
});

t.test('right logins in parallel all succeed: claims queue, they do not lock each other out', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis', { LOGIN_MAX_ATTEMPTS: '3' }));
  const seeded = await seedHomelab(svc.services);
  const logins = await Promise.all(
    Array.from({ length: 20 }, () => request(`${svc.url}${LOGIN}`, { method: 'POST', json: { clientId: seeded.clientId, clientSecret: seeded.clientSecret } })),
  );
  t.same(logins.map((r) => r.status), Array(20).fill(200));
});

/**
 * The service's machine auth, built again with a clock the test moves. `inOneGroup` runs
 * logins so that they commit in one group, queued in the order given: a change holds the
 * group pipeline until each has queued, one after another.
 */
function instrumented(svc: TestService, clock: { now: number }) {
  const s = svc.services;
  let onQueued: (() => void) | undefined;
  const changes: typeof s.changes = {
    ...s.changes,
    groupedByCaller: (actor, origin, key) => {
      const grant = s.changes.groupedByCaller(actor, origin, key);
      return {
        run: <T>(body: (c: Change) => Promise<T>) => {
          const result = grant.run(body);
          onQueued?.();
          return result;
        },
      };
    },
  };
  const auth = machineAuth({
    store: s.store,
    keyring: s.keyring,
    tokens: identityTokens(randomBytes(32)),
    caches: s.caches,
    changes,
    lockout: { maxAttempts: 3, seconds: 300 },
    now: () => clock.now,
  });
  async function inOneGroup(logins: Array<() => Promise<string>>): Promise<string[]> {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const held = s.changes.groupedByCaller({ actorType: 'system', actorId: null }, {}, 'gate').run(() => gate);
    const outcomes: Promise<string>[] = [];
    for (const login of logins) {
      const queued = new Promise<void>((resolve) => (onQueued = resolve));
      outcomes.push(login());
      await queued;
    }
    onQueued = undefined;
    open();
    await held;
    return Promise.all(outcomes);
  }
  return { auth, inOneGroup };
}

async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    if (err instanceof AppError) return err.code === 'RATE_LIMITED' ? `locked ${err.headers?.['Retry-After']}` : err.code;
    throw err;
  }
}

// That a locked attempt's secret is compared with nothing (the claim decides it in SQL):
// test/storage/identities.test.ts.
t.test('failures are bounded by the limit; failures older than the window stop counting (injected clock)', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const seeded = await seedHomelab(svc.services);
  const clock = { now: Date.parse('2026-11-26T00:00:00Z') };
  const { auth } = instrumented(svc, clock);
  const guess = (i: number) => outcome(auth.login({ clientId: seeded.clientId, clientSecret: wrong(i), ip: '127.0.0.1' }));
  const right = () => outcome(auth.login({ clientId: seeded.clientId, clientSecret: seeded.clientSecret, ip: '127.0.0.1' }));

  const burst = await Promise.all(Array.from({ length: 60 }, (_, i) => guess(i)));
  t.equal(burst.filter((o) => o === 'UNAUTHORIZED').length, 3);
  t.equal(burst.filter((o) => o.startsWith('locked')).length, 57);
  t.equal(await right(), 'locked 300', 'locked for the whole window from the last failure');

  clock.now += 299_000;
  t.equal(await right(), 'locked 1', 'still locked one second before the window ends');
  clock.now += 1_000;
  t.equal(await right(), 'ok', 'the window has passed');

  // Decay: two failures, then the window passes; two more are a fresh count, not a lock.
  t.same([await guess(100), await guess(101)], ['UNAUTHORIZED', 'UNAUTHORIZED']);
  clock.now += 300_000;
  t.same([await guess(102), await guess(103)], ['UNAUTHORIZED', 'UNAUTHORIZED'], 'failures older than the window no longer count');
  clock.now += 10_000;
  t.equal(await guess(104), 'UNAUTHORIZED', 'the third failure within the window is checked ...');
  t.equal(await guess(105), 'locked 300', '... and locks');
  t.equal(await right(), 'locked 300');
});

// ESO logs in on every sync: one identity's logins in a group are decided by their claims
// in statement order, the next claim sent without waiting for the one before it.
t.test('logins committed in one group: decided in order, as one after another would be', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const seeded = await seedHomelab(svc.services);
  const clock = { now: Date.parse('2026-11-26T00:00:00Z') };
  const { auth, inOneGroup } = instrumented(svc, clock);
  const guess = (i: number) => () => outcome(auth.login({ clientId: seeded.clientId, clientSecret: wrong(i), ip: '127.0.0.1' }));
  const right = () => outcome(auth.login({ clientId: seeded.clientId, clientSecret: seeded.clientSecret, ip: '127.0.0.1' }));
  const failedLogins = async () =>
    (await svc.services.store.sql<{ failedLogins: number }[]>`select coalesce(sum(failed_logins), 0)::int as failed_logins from identity_login_failures where identity_id = ${seeded.identityId}`)[0]!.failedLogins;
  const tokens = async () => (await svc.services.store.sql`select id from identity_access_tokens where identity_id = ${seeded.identityId}`).length;

  t.same(await inOneGroup(Array(12).fill(right)), Array(12).fill('ok'), '12 right logins (limit 3): none locks another out');
  t.equal(await tokens(), 12, 'each issued its token');
  t.equal(await failedLogins(), 0);

  const mixed = await inOneGroup([guess(1), guess(2), right, guess(3), guess(4), guess(5), right, guess(6)]);
  t.same(
    mixed,
    ['UNAUTHORIZED', 'UNAUTHORIZED', 'ok', 'UNAUTHORIZED', 'UNAUTHORIZED', 'UNAUTHORIZED', 'locked 300', 'locked 300'],
    'a success clears the two failures before it; three after it lock the rest out',
  );
  t.equal(await failedLogins(), 3);
  t.equal(await tokens(), 13, 'only the success issued a token');

  // After a rekey, a secret still under the old MAC version is compared only after its
  // claim (which counted a failure) and cleared on a match: the next claim waits for that.
  clock.now += 301_000;
  await svc.services.store.transaction((s) => rekeyMacKey(s, svc.services.crypto));
  await svc.services.bus.publish(topics.macKey, ''); // as the rekey command does: logins read the new key
  t.same(await inOneGroup(Array(8).fill(right)), Array(8).fill('ok'), '8 right logins under the old MAC version (limit 3)');
  t.equal(await failedLogins(), 0);
  const [row] = await svc.services.store.sql<{ macKeyId: string }[]>`select mac_key_id from identity_client_secrets where identity_id = ${seeded.identityId}`;
  t.equal(row!.macKeyId, (await svc.services.store.keys.currentMacKey())!.id, 're-MACed under the current version');
});
