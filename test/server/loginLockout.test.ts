// Administrator login lockout: counted per address, known or not, claimed before the
// password is checked, so a parallel burst cannot outrun it and an unknown address
// locks exactly like a known one; argon2 stays off the event loop.
import t from 'tap';
import { ADMIN, ADMIN_LOGIN, signupAdmin } from '../helpers/admin.js';
import { request } from '../helpers/http.js';
import { BACKENDS, startTestService, testEnv } from '../helpers/service.js';

const loginWith = (url: string, json: unknown) => request(`${url}/api/v3/auth/login`, { method: 'POST', json });

for (const backend of BACKENDS) {
  t.test(`a parallel burst of guesses cannot outrun the lockout; an unknown address locks the same way (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend, { LOGIN_MAX_ATTEMPTS: '3' }));
    await signupAdmin(svc.url);
    const UNKNOWN = 'nobody@example.test';

    async function burst(email: string) {
      const guesses = await Promise.all(Array.from({ length: 30 }, (_, i) => loginWith(svc.url, { email, password: `wrong guess ${i}!` })));
      const right = await loginWith(svc.url, { email, password: ADMIN.password });
      return { guesses, right };
    }
    const known = await burst(ADMIN.email);
    const statuses = known.guesses.map((r) => r.status).sort();
    t.same(statuses, [...Array(3).fill(401), ...Array(27).fill(429)], 'exactly 3 guesses were checked, 27 refused');
    t.equal(known.right.status, 429, 'the right password is refused while locked');
    t.match(known.right.body.message, /^Too many failed login attempts; try again in \d+ seconds$/);
    t.ok(Number(known.right.headers.get('retry-after')) > 0, 'Retry-After');

    const unknown = await burst(UNKNOWN);
    t.same(unknown.guesses.map((r) => r.status).sort(), statuses, 'an unknown address: the same statuses');
    t.equal(unknown.right.status, 429);
    // Same answer apart from the seconds left, which count down.
    const shape = (r: { body: { error: string; message: string } }) => ({ error: r.body.error, message: r.body.message.replace(/\d+/g, 'N') });
    t.same(shape(unknown.right), shape(known.right), 'the same 429 for an unknown address');
    t.same(new Set([...known.guesses, ...unknown.guesses].filter((g) => g.status === 429).map((g) => JSON.stringify(shape(g)))).size, 1, 'every 429 alike');
    t.ok(Number(unknown.right.headers.get('retry-after')) > 0, 'Retry-After for an unknown address too');
    for (const r of [...known.guesses, ...unknown.guesses].filter((g) => g.status === 401)) t.equal(r.body.message, 'Invalid login');

    // Counted per normalised address, stored only as a keyed hash.
    const sql = svc.services.store.sql;
    const rows = await sql<{ emailKey: Buffer; attempts: number }[]>`select email_key, attempts from login_attempts order by attempts`;
    t.same(rows.map((r) => [r.emailKey.length, r.attempts]), [[32, 3], [32, 3]], 'one row per address, 32-byte keys');
    const dump = JSON.stringify(await sql`select * from login_attempts`);
    t.notMatch(dump, /nobody|example/, 'no address in clear');
    const variant = await loginWith(svc.url, { email: `  ${ADMIN.email.toUpperCase()} `, password: ADMIN.password });
    t.equal(variant.status, 429, 'the same address in other case and with spaces is the same counter');

    // One by one after the lock ends (made to end by ageing the rows): the same order.
    await sql`update login_attempts set last_attempt_at = now() - interval '1 hour'`;
    t.equal((await loginWith(svc.url, { email: 'third@example.test', password: 'whatever it is!' })).status, 401);
    t.same((await sql`select attempts from login_attempts`).map((r) => r.attempts), [1], 'rows that no longer count were purged');
    const sequence = async (email: string) => {
      const out: number[] = [];
      for (let i = 0; i < 4; i++) out.push((await loginWith(svc.url, { email, password: `wrong again ${i}!` })).status);
      return out;
    };
    t.same(await sequence(ADMIN.email), [401, 401, 401, 429]);
    t.same(await sequence(UNKNOWN), [401, 401, 401, 429], 'an unknown address: same statuses in the same order');

    // A success resets the count: after it, three more guesses are checked again.
    await sql`update login_attempts set last_attempt_at = now() - interval '1 hour'`;
    t.equal((await loginWith(svc.url, { email: ADMIN.email, password: 'wrong once more!' })).status, 401);
    t.equal((await loginWith(svc.url, ADMIN_LOGIN)).status, 200, 'the right password once the lock has ended');
    t.same(await sequence(ADMIN.email), [401, 401, 401, 429], 'the count started again after the success');
  });
}

t.test("a stranger's guesses lock out only the stranger's source; a source over its budget is refused before argon2", async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis', { LOGIN_MAX_ATTEMPTS: '3', LOGIN_SOURCE_MAX_ATTEMPTS: '6', TRUSTED_PROXIES: '127.0.0.1/32, ::1' }));
  await signupAdmin(svc.url);
  const from = (address: string, json: unknown) => request(`${svc.url}/api/v3/auth/login`, { method: 'POST', json, headers: { 'x-forwarded-for': address } });
  // The service's own crypto object, observed: how many argon2 verifications ran.
  const crypto = svc.services.crypto;
  const verify = crypto.verifyPassword.bind(crypto);
  let verified = 0;
  crypto.verifyPassword = (hash, password) => (verified++, verify(hash, password));
  t.teardown(() => void (crypto.verifyPassword = verify));

  const STRANGER = '203.0.113.66';
  const guesses = await Promise.all(Array.from({ length: 30 }, (_, i) => from(STRANGER, { email: ADMIN.email, password: `wrong guess ${i}!` })));
  t.same(guesses.map((r) => r.status).sort(), [...Array(3).fill(401), ...Array(27).fill(429)], 'a parallel burst from one source: 3 checked');
  t.equal(verified, 3, 'three verifications');
  t.equal((await from(STRANGER, ADMIN_LOGIN)).status, 429, "the stranger's source is locked, even with the right password");
  t.equal((await from('198.51.100.4', ADMIN_LOGIN)).status, 200, 'the superadmin logs in from another address');

  // A spray of addresses from one source: its budget (6) of verifications, then 429 with no argon2 work.
  verified = 0;
  const spray = await Promise.all(Array.from({ length: 20 }, (_, i) => from('192.0.2.50', { email: `sprayed${i}@example.test`, password: 'a guessed password' })));
  t.same(spray.map((r) => r.status).sort(), [...Array(6).fill(401), ...Array(14).fill(429)], '6 verified, 14 refused');
  t.equal(verified, 6, 'the refused ones cost no argon2 verification');
  for (const r of spray.filter((x) => x.status === 429)) {
    t.match(r.body.message, /^Too many failed login attempts; try again in \d+ seconds$/);
    t.ok(Number(r.headers.get('retry-after')) > 0, 'Retry-After');
  }
  verified = 0;
  t.equal((await from('192.0.2.50', ADMIN_LOGIN)).status, 429, 'the spent source gets nothing verified');
  t.equal(verified, 0);
  t.equal((await from('192.0.2.51', ADMIN_LOGIN)).status, 200, 'another source is not affected');
});

t.test('argon2 does not block the event loop: a status request answers while logins are verified', async (t) => {
  // 32 parallel logins from one source: above the default per-source budget (20).
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis', { LOGIN_SOURCE_MAX_ATTEMPTS: '100' }));
  // The test's HTTP helpers check each answer against the contract in this same process,
  // compiling a validator on its first use: done here, before anything is timed (the
  // compiling, on the event loop, outlasted every verification of the burst below).
  t.equal((await loginWith(svc.url, { email: 'warm-up@example.test', password: 'not a password!' })).status, 401);
  t.equal((await request(`${svc.url}/api/status`)).status, 200);
  // The service's own crypto object (injected into the users domain), observed.
  const crypto = svc.services.crypto;
  const verify = crypto.verifyPassword.bind(crypto);
  const N = 32;
  let started = 0;
  let running = 0;
  let allStarted!: () => void;
  const allStartedP = new Promise<void>((resolve) => (allStarted = resolve));
  crypto.verifyPassword = async (hash, password) => {
    running++;
    if (++started === N) allStarted();
    try {
      return await verify(hash, password);
    } finally {
      running--;
    }
  };
  const logins = Promise.all(Array.from({ length: N }, (_, i) => loginWith(svc.url, { email: `someone${i}@example.test`, password: 'not a password!' })));
  await allStartedP;
  const status = await request(`${svc.url}/api/status`);
  t.equal(status.status, 200);
  t.ok(running > 0, `the status answered while ${running} of ${N} verifications were still running`);
  t.same((await logins).map((r) => r.status), Array(N).fill(401));
});
