// The session cookie's Secure flag: COOKIE_SECURE (auto by default: the first
// X-Forwarded-Proto value, any case), the same on login, signup and logout's clearing cookie.
import t from 'tap';
import { ADMIN, ADMIN_LOGIN, signupAdmin } from '../../helpers/admin.js';
import { request } from '../../helpers/http.js';
import { startTestService, testEnv } from '../../helpers/service.js';

const LOGIN = '/api/v3/auth/login';

t.test('the Secure cookie flag follows COOKIE_SECURE and X-Forwarded-Proto (postgres+redis)', async (t) => {
  const secureOf = (line: string | null) => {
    t.match(line, /^vault_session=[^;]*; HttpOnly; SameSite=Strict; Path=\/; Max-Age=\d+(; Secure)?$/);
    return / Secure$/.test(line ?? '');
  };
  async function cookies(url: string, proto: string | undefined) {
    const headers: Record<string, string> = proto === undefined ? {} : { 'x-forwarded-proto': proto };
    const login = await request(`${url}${LOGIN}`, { method: 'POST', json: ADMIN_LOGIN, headers });
    t.equal(login.status, 200);
    const logout = await request(`${url}/api/v1/auth/logout`, { method: 'POST', token: login.body.token, headers });
    t.equal(logout.status, 200);
    return { login: secureOf(login.headers.get('set-cookie')), logout: secureOf(logout.headers.get('set-cookie')) };
  }

  const auto = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const signup = await request(`${auto.url}/api/v1/admin/signup`, { method: 'POST', json: ADMIN, headers: { 'x-forwarded-proto': 'HTTPS' } });
  t.equal(secureOf(signup.headers.get('set-cookie')), true, 'signup: Secure over TLS');
  for (const [proto, secure] of [
    [undefined, false],
    ['http', false],
    ['https', true],
    ['HTTPS', true],
    [' Https ', true],
    ['https, http', true],
    ['https,http', true],
    ['http, https', false],
    ['httpsx', false],
    ['', false],
  ] as const) {
    t.same(await cookies(auto.url, proto), { login: secure, logout: secure }, `auto, X-Forwarded-Proto ${JSON.stringify(proto)}`);
  }

  const always = await startTestService(t, await testEnv(t, 'postgres+redis', { COOKIE_SECURE: 'always' }));
  await signupAdmin(always.url);
  t.same(await cookies(always.url, undefined), { login: true, logout: true }, 'always: Secure without the header');
  t.same(await cookies(always.url, 'http'), { login: true, logout: true }, 'always: Secure even over plain HTTP');

  const never = await startTestService(t, await testEnv(t, 'postgres+redis', { COOKIE_SECURE: 'never' }));
  await signupAdmin(never.url);
  t.same(await cookies(never.url, 'https'), { login: false, logout: false }, 'never: not Secure even over TLS');
});
