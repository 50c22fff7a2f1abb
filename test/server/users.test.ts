// People: first-visit registration (once), password login with "Invalid login" either
// way, sessions by bearer and by cookie with CSRF, logout, lockout, names, and bad input
// to every login/session route. More in loginLockout.test.ts, auth/sessionCookie.test.ts
// and (the same work for a wrong password and an unknown address) domain/users.test.ts.
import t from 'tap';
import { ADMIN, ADMIN_LOGIN, signupAdmin } from '../helpers/admin.js';
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
  const cookieLine = (await request(`${svc.url}/api/v3/auth/login`, { method: 'POST', json: ADMIN_LOGIN })).headers.get('set-cookie')!;
  t.match(cookieLine, /^vault_session=[\w.-]+; HttpOnly; SameSite=Strict; Path=\/; Max-Age=\d+$/);

  const again = await request(`${svc.url}/api/v1/admin/signup`, { method: 'POST', json: { ...ADMIN, email: 'other@example.test' } });
  t.equal(again.status, 400);
  t.equal(again.body.message, 'Admin account has already been set up');

  for (const body of [{ ...ADMIN_LOGIN, password: 'wrong password!!' }, { email: 'nobody@example.test', password: ADMIN.password }]) {
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
  for (let i = 0; i < 5; i++) await request(`${svc.url}/api/v3/auth/login`, { method: 'POST', json: { ...ADMIN_LOGIN, password: `wrong ${i} password` } });
  const locked = await request(`${svc.url}/api/v3/auth/login`, { method: 'POST', json: ADMIN_LOGIN });
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

const LOGIN = '/api/v3/auth/login';
const loginWith = (url: string, json: unknown) => request(`${url}${LOGIN}`, { method: 'POST', json });

t.test('logout with a bearer token; bad input to login, logout, me and signup (embedded)', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'embedded', { LOGIN_MAX_ATTEMPTS: '100', MAX_BODY_BYTES: '4096' }));
  const url = svc.url;
  const raw = (path: string, body: string, headers: Record<string, string> = {}) =>
    request(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const initialized = async () => (await request(`${url}/api/v1/admin/config`)).body.config.initialized;
  const big = 'x'.repeat(8192);

  await t.test('signup: bad input is refused and sets nothing up', async (t) => {
    const cases: [string, () => Promise<{ status: number; contentType: string | null; body: any }>, number][] = [
      ['malformed JSON', () => raw('/api/v1/admin/signup', '{"email":'), 400],
      ['an array', () => request(`${url}/api/v1/admin/signup`, { method: 'POST', json: [] }), 422],
      ['null', () => raw('/api/v1/admin/signup', 'null'), 422],
      ['email a number', () => request(`${url}/api/v1/admin/signup`, { method: 'POST', json: { ...ADMIN, email: 7 } }), 422],
      ['firstName null', () => request(`${url}/api/v1/admin/signup`, { method: 'POST', json: { ...ADMIN, firstName: null } }), 422],
      ['lastName an object', () => request(`${url}/api/v1/admin/signup`, { method: 'POST', json: { ...ADMIN, lastName: {} } }), 422],
      ['oversize', () => request(`${url}/api/v1/admin/signup`, { method: 'POST', json: { ...ADMIN, firstName: big } }), 413],
      ['NUL in email', () => request(`${url}/api/v1/admin/signup`, { method: 'POST', json: { ...ADMIN, email: 'a\u0000@example.test' } }), 422],
      ['NUL in firstName', () => request(`${url}/api/v1/admin/signup`, { method: 'POST', json: { ...ADMIN, firstName: 'A\u0000da' } }), 422],
      ['lone surrogate in firstName', () => raw('/api/v1/admin/signup', JSON.stringify({ ...ADMIN }).replace('"Ada"', '"A\\ud800da"')), 422],
      ['newline in lastName', () => request(`${url}/api/v1/admin/signup`, { method: 'POST', json: { ...ADMIN, lastName: 'Ad\nmin' } }), 422],
      ['blank firstName', () => request(`${url}/api/v1/admin/signup`, { method: 'POST', json: { ...ADMIN, firstName: '   ' } }), 422],
    ];
    for (const [name, send, status] of cases) {
      const r = await send();
      t.equal(r.status, status, name);
      t.equal(r.contentType, JSON_TYPE, name);
    }
    t.equal(await initialized(), false, 'nothing set up');
  });

  const admin = await signupAdmin(url);

  await t.test('login: bad input answers a JSON 4xx; an impossible address is just an unknown one', async (t) => {
    const cases: [string, () => Promise<{ status: number; contentType: string | null; body: any }>, number][] = [
      ['malformed JSON', () => raw(LOGIN, '{"email":"a@b", "password":'), 400],
      ['an array', () => loginWith(url, []), 422],
      ['a string', () => loginWith(url, 'admin'), 422],
      ['email a number', () => loginWith(url, { email: 7, password: ADMIN.password }), 422],
      ['password an object', () => loginWith(url, { email: ADMIN.email, password: { $ne: null } }), 422],
      ['password missing', () => loginWith(url, { email: ADMIN.email }), 422],
      ['oversize', () => loginWith(url, { email: ADMIN.email, password: big }), 413],
      ['email longer than an address can be', () => loginWith(url, { email: `${'a'.repeat(400)}@example.test`, password: ADMIN.password }), 422],
    ];
    for (const [name, send, status] of cases) {
      const r = await send();
      t.equal(r.status, status, name);
      t.equal(r.contentType, JSON_TYPE, name);
    }
    for (const email of [`${ADMIN.email}\u0000`, 'nobody\u0000@example.test', '\u0000', 'a\ud800@example.test', 'not an address']) {
      const r = await loginWith(url, { email, password: ADMIN.password });
      t.equal(r.status, 401, JSON.stringify(email));
      t.equal(r.body.message, 'Invalid login', JSON.stringify(email));
    }
    const nulPassword = await loginWith(url, { email: ADMIN.email, password: `${ADMIN.password}\u0000` });
    t.equal(nulPassword.status, 401, 'a NUL in the password is a wrong password');
    t.equal(nulPassword.body.message, 'Invalid login');
  });

  await t.test('me: bad credentials are 401 JSON', async (t) => {
    const bad: Record<string, Record<string, string>> = {
      'garbage bearer': { authorization: 'Bearer not-a-token' },
      'oversize bearer': { authorization: `Bearer ${'a'.repeat(5000)}` },
      'a forged session token': { authorization: `Bearer ${admin.token.slice(0, -4)}AAAA` },
      'garbage cookie': { cookie: 'vault_session=garbage' },
      'empty cookie': { cookie: 'vault_session=' },
    };
    for (const [name, headers] of Object.entries(bad)) {
      const r = await request(`${url}/api/v1/users/me`, { headers });
      t.equal(r.status, 401, name);
      t.equal(r.contentType, JSON_TYPE, name);
    }
    const me = await request(`${url}/api/v1/users/me?junk=%00`, { token: admin.token });
    t.equal(me.status, 200, 'a stray query string changes nothing');
  });

  await t.test('logout: bad input; a bearer token logs out without a CSRF token', async (t) => {
    const session = (await loginWith(url, ADMIN_LOGIN)).body;
    for (const [name, send, status] of [
      ['no credentials', () => raw('/api/v1/auth/logout', '{}'), 401],
      ['garbage bearer', () => raw('/api/v1/auth/logout', '{}', { authorization: 'Bearer x.y.z' }), 401],
      ['oversize', () => raw('/api/v1/auth/logout', JSON.stringify({ pad: big }), { authorization: `Bearer ${session.token}` }), 413],
      ['cookie without CSRF token', () => raw('/api/v1/auth/logout', '{}', { cookie: `vault_session=${session.token}` }), 403],
    ] as const) {
      const r = await send();
      t.equal(r.status, status, name);
      t.equal(r.contentType, JSON_TYPE, name);
    }
    t.equal((await request(`${url}/api/v1/users/me`, { token: session.token })).status, 200, 'refused logouts ended nothing');

    // The body is not read: malformed JSON, wrong types or a NUL do not stop a logout.
    const out = await raw('/api/v1/auth/logout', '{"a":"\\u0000", "b": [', { authorization: `Bearer ${session.token}` });
    t.equal(out.status, 200);
    t.equal(out.body.message, 'Successfully logged out');
    t.match(out.headers.get('set-cookie'), /^vault_session=; HttpOnly; SameSite=Strict; Path=\/; Max-Age=0$/);
    const after = await request(`${url}/api/v1/users/me`, { token: session.token });
    t.equal(after.status, 401, 'the bearer session ended');
    t.equal((await request(`${url}/api/v1/auth/logout`, { method: 'POST', token: session.token })).status, 401, 'a second logout: the session is gone');
    t.equal((await request(`${url}/api/v1/users/me`, { token: admin.token })).status, 200, 'other sessions live on');
  });
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
