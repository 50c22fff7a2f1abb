// Machine (Universal Auth) login lockout: an attempt is claimed before its secret is
// checked, so a parallel burst of wrong guesses gets at most LOGIN_MAX_ATTEMPTS checks;
// failures older than the lockout window stop counting; right logins in parallel are
// never locked out by each other.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { identityTokens } from '../../server/auth/tokens.js';
import { machineAuth } from '../../server/domain/machineAuth.js';
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
    const [row] = await svc.services.store.sql<{ failedLogins: number }[]>`select failed_logins from identity_universal_auth where identity_id = ${seeded.identityId}`;
    t.equal(row!.failedLogins, 3, 'three failures counted');

    // The lock ends with the window (aged here); a success then clears the count.
    await svc.services.store.sql`update identity_universal_auth set last_failed_login_at = now() - interval '301 seconds'`;
    const after = await request(`${svc.url}${LOGIN}`, { method: 'POST', json: { clientId: seeded.clientId, clientSecret: seeded.clientSecret } });
    t.equal(after.status, 200, 'the right secret once the window has passed');
    const [cleared] = await svc.services.store.sql<{ failedLogins: number }[]>`select failed_logins from identity_universal_auth where identity_id = ${seeded.identityId}`;
    t.equal(cleared!.failedLogins, 0, 'a success clears the count');
  });
}

t.test('right logins in parallel all succeed: claims queue, they do not lock each other out', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis', { LOGIN_MAX_ATTEMPTS: '3' }));
  const seeded = await seedHomelab(svc.services);
  const logins = await Promise.all(
    Array.from({ length: 20 }, () => request(`${svc.url}${LOGIN}`, { method: 'POST', json: { clientId: seeded.clientId, clientSecret: seeded.clientSecret } })),
  );
  t.same(logins.map((r) => r.status), Array(20).fill(200));
});

/** The service's machine auth, built again with a clock the test moves and a count of secret checks. */
function instrumented(svc: TestService, clock: { now: number }) {
  const s = svc.services;
  let checks = 0;
  // A secret check is the comparison of the presented secret with the stored hashes.
  const keyring: typeof s.keyring = {
    ...s.keyring,
    findClientSecret: (secret, candidates, current) => {
      checks++;
      return s.keyring.findClientSecret(secret, candidates, current);
    },
  };
  const auth = machineAuth({
    store: s.store,
    keyring,
    tokens: identityTokens(randomBytes(32)),
    caches: s.caches,
    changes: s.changes,
    lockout: { maxAttempts: 3, seconds: 300 },
    now: () => clock.now,
  });
  return { auth, checks: () => checks };
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

t.test('secret checks are bounded by the limit; failures older than the window stop counting (injected clock)', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const seeded = await seedHomelab(svc.services);
  const clock = { now: Date.parse('2026-11-26T00:00:00Z') };
  const { auth, checks } = instrumented(svc, clock);
  const guess = (i: number) => outcome(auth.login({ clientId: seeded.clientId, clientSecret: wrong(i), ip: '127.0.0.1' }));
  const right = () => outcome(auth.login({ clientId: seeded.clientId, clientSecret: seeded.clientSecret, ip: '127.0.0.1' }));

  const burst = await Promise.all(Array.from({ length: 60 }, (_, i) => guess(i)));
  t.equal(checks(), 3, 'exactly 3 real secret checks for 60 parallel wrong guesses');
  t.equal(burst.filter((o) => o === 'UNAUTHORIZED').length, 3);
  t.equal(burst.filter((o) => o.startsWith('locked')).length, 57);
  t.equal(await right(), 'locked 300', 'locked for the whole window from the last failure');

  clock.now += 299_000;
  t.equal(await right(), 'locked 1', 'still locked one second before the window ends');
  t.equal(checks(), 3, 'no check while locked');
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
