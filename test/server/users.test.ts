// People: first-visit registration (once), password login with "Invalid login" in the
// same time either way, sessions by bearer and by cookie with CSRF, logout, lockout.
import t from 'tap';
import { ADMIN, signupAdmin } from '../helpers/admin.js';
import { JSON_TYPE, request } from '../helpers/http.js';
import { startTestService, testEnv } from '../helpers/service.js';

t.test('superadmin signup, login, sessions (postgres+redis)', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis', { LOGIN_MAX_ATTEMPTS: '5' }));
  const config = async () => (await request(`${svc.url}/api/v1/admin/config`)).body.config.initialized;
  t.equal(await config(), false, 'not set up');

  const weak = await request(`${svc.url}/api/v1/admin/signup`, { method: 'POST', json: { ...ADMIN, password: 'short' } });
  t.equal(weak.status, 422);
  t.equal(await config(), false, 'a refused signup set nothing up');

  const admin = await signupAdmin(svc.url);
  t.equal(await config(), true);
  const cookieLine = (await request(`${svc.url}/api/v3/auth/login`, { method: 'POST', json: ADMIN })).headers.get('set-cookie')!;
  t.match(cookieLine, /^vault_session=[\w.-]+; HttpOnly; SameSite=Strict; Path=\/; Max-Age=\d+$/);

  const again = await request(`${svc.url}/api/v1/admin/signup`, { method: 'POST', json: { ...ADMIN, email: 'other@example.test' } });
  t.equal(again.status, 400);
  t.equal(again.body.message, 'Admin account has already been set up');

  for (const body of [{ ...ADMIN, password: 'wrong password!!' }, { email: 'nobody@example.test', password: ADMIN.password }]) {
    const r = await request(`${svc.url}/api/v3/auth/login`, { method: 'POST', json: body });
    t.equal(r.status, 401);
    t.equal(r.contentType, JSON_TYPE);
    t.equal(r.body.message, 'Invalid login');
  }

  const me = await request(`${svc.url}/api/v1/users/me`, { token: admin.token });
  t.equal(me.status, 200);
  t.equal(me.body.user.email, ADMIN.email);
  t.equal(me.body.user.superAdmin, true);
  t.equal((await request(`${svc.url}/api/v1/users/me`, { headers: { cookie: admin.cookie } })).status, 200, 'cookie session');

  // A state-changing request with the cookie needs the CSRF token.
  const noCsrf = await request(`${svc.url}/api/v1/auth/logout`, { method: 'POST', headers: { cookie: admin.cookie } });
  t.equal(noCsrf.status, 403);
  t.match(noCsrf.body.message, /CSRF/);
  const badCsrf = await request(`${svc.url}/api/v1/auth/logout`, { method: 'POST', headers: { cookie: admin.cookie, 'x-csrf-token': 'x' } });
  t.equal(badCsrf.status, 403);
  const logout = await request(`${svc.url}/api/v1/auth/logout`, { method: 'POST', headers: { cookie: admin.cookie, 'x-csrf-token': admin.csrfToken } });
  t.equal(logout.status, 200);
  t.match(logout.headers.get('set-cookie'), /Max-Age=0/);
  t.equal((await request(`${svc.url}/api/v1/users/me`, { token: admin.token })).status, 401, 'logout ended the session');

  // Lockout after repeated failures, even with the right password afterwards.
  for (let i = 0; i < 5; i++) await request(`${svc.url}/api/v3/auth/login`, { method: 'POST', json: { ...ADMIN, password: `wrong ${i} password` } });
  const locked = await request(`${svc.url}/api/v3/auth/login`, { method: 'POST', json: ADMIN });
  t.equal(locked.status, 429);
  t.ok(Number(locked.headers.get('retry-after')) > 0);
});

t.test('two first visits at once: exactly one superadmin (embedded)', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  const results = await Promise.all(
    ['a', 'b', 'c'].map((n) => request(`${svc.url}/api/v1/admin/signup`, { method: 'POST', json: { ...ADMIN, email: `${n}@example.test` } })),
  );
  t.same(results.map((r) => r.status).sort(), [200, 400, 400]);
});

t.test('the superadmin adds people; nobody else can (embedded)', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  const admin = await signupAdmin(svc.url);
  const users = (token?: string, json?: unknown) =>
    request(`${svc.url}/api/v1/users`, json === undefined ? { token } : { method: 'POST', token, json });
  const pat = { email: 'Pat@Example.test', password: 'pat passphrase 123', firstName: 'Pat', lastName: 'Plain' };

  const created = await users(admin.token, pat);
  t.equal(created.status, 200);
  t.match(created.body.user, { email: 'pat@example.test', firstName: 'Pat', lastName: 'Plain', superAdmin: false, id: /^[0-9a-f-]{36}$/ });
  t.notOk('passwordHash' in created.body.user, 'no hash in the answer');
  const dup = await users(admin.token, { ...pat, email: 'pat@example.TEST' });
  t.equal(dup.status, 400);
  t.equal(dup.body.message, 'A user with this email already exists');

  const login = await request(`${svc.url}/api/v3/auth/login`, { method: 'POST', json: { email: pat.email, password: pat.password } });
  t.equal(login.status, 200, 'the new person logs in with the password given');
  t.equal(login.body.user.superAdmin, false);

  const listed = await users(admin.token);
  t.equal(listed.status, 200);
  t.same(listed.body.users.map((u: { email: string }) => u.email), [ADMIN.email, 'pat@example.test']);
  t.notMatch(JSON.stringify(listed.body), /argon2|passphrase/, 'no hashes, no passwords');

  // Only the superadmin: a plain person gets 403, nobody gets in without a session.
  t.equal((await users(login.body.token)).status, 403);
  t.equal((await users(login.body.token, { ...pat, email: 'x@example.test' })).status, 403);
  t.equal((await users(undefined)).status, 401);
  // A browser session without the CSRF token is refused before anything is written.
  const noCsrf = await request(`${svc.url}/api/v1/users`, { method: 'POST', headers: { cookie: admin.cookie }, json: { ...pat, email: 'y@example.test' } });
  t.equal(noCsrf.status, 403);

  for (const bad of [{}, { ...pat, email: 'not-an-address' }, { ...pat, password: 'short' }, { ...pat, firstName: '' }, { ...pat, email: 7 }, []]) {
    const r = await users(admin.token, bad);
    t.ok(r.status === 422, `refused: ${JSON.stringify(bad)} -> ${r.status}`);
  }
  t.equal((await users(admin.token)).body.users.length, 2, 'nothing written by refused requests');
  const audit = await svc.services.store.sql<{ eventType: string; metadata: Record<string, unknown> }[]>`select event_type, metadata from audit_log where event_type = 'create-user'`;
  t.equal(audit.length, 1, 'one create-user entry');
  t.notMatch(JSON.stringify(audit), pat.password, 'the password never reaches the audit trail');
});

t.test('people\'s names: trimmed, 1 to 64 characters, no control characters or lone surrogates (postgres+redis)', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const admin = await signupAdmin(svc.url);
  const base = { email: 'pat@example.test', password: 'pat passphrase 123', firstName: 'Pat', lastName: 'Plain' };
  const create = (body: string) =>
    request(`${svc.url}/api/v1/users`, { method: 'POST', token: admin.token, headers: { 'content-type': 'application/json' }, body });
  const withField = (field: string, jsonText: string) => JSON.stringify({ ...base, [field]: '@@' }).replace('"@@"', jsonText);
  for (const [field, jsonText] of [
    ['firstName', '"P\\ud800t"'],
    ['firstName', '"\\udc00"'],
    ['firstName', '"Pat\\nEvil"'],
    ['firstName', '"Pat\\u0000"'],
    ['firstName', '"Pat\\u0085"'],
    ['firstName', '"\\t "'],
    ['lastName', '"Pl\\ud83dain"'],
    ['lastName', '"Pl\\r\\nain"'],
    ['lastName', '"Pl\\u007fain"'],
    ['email', '"pat\\ud800@example.test"'],
  ]) {
    const r = await create(withField(field!, jsonText!));
    t.equal(r.status, 422, `${field} ${jsonText}`);
    t.equal(r.body.error, 'ValidationFailure');
  }
  t.equal((await request(`${svc.url}/api/v1/users`, { token: admin.token })).body.users.length, 1, 'nothing written');

  const ok = await create(withField('firstName', '"  P\\ud83d\\ude00t  "'));
  t.equal(ok.status, 200, 'a surrogate pair (an emoji) is a character like any other');
  t.equal(ok.body.user.firstName, 'P\u{1F600}t', 'trimmed, stored exactly');
  const noLast = await create(JSON.stringify({ ...base, email: 'lee@example.test', lastName: '   ' }));
  t.equal(noLast.status, 200, 'a blank last name is no last name');
  t.equal(noLast.body.user.lastName, '');
});
