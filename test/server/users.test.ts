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
