// Memory of the machine-auth path: verified tokens and token states leave the caches
// when they expire or are revoked, and the sweep frees them without a request asking.
import t from 'tap';
import { request } from '../../helpers/http.js';
import { login, seedHomelab, startTestService, testEnv } from '../../helpers/service.js';

t.test('a revoked token leaves the caches; expired entries are swept', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  const seeded = await seedHomelab(svc.services);
  const { caches, machineAuth } = svc.services;
  const read = (token: string) => request(`${svc.url}/api/v3/secrets/raw?workspaceSlug=homelab&environment=prod&secretPath=/`, { token });

  const token = await login(svc.url, seeded);
  t.equal((await read(token)).status, 200);
  t.equal(caches.accessTokens.size, 1, 'the live token state is cached');
  t.equal(machineAuth.verifiedSize, 1, 'the verified token is kept');

  t.equal((await request(`${svc.url}/api/v1/auth/token/revoke`, { method: 'POST', json: { accessToken: token } })).status, 200);
  t.equal(caches.accessTokens.size, 0, 'revocation removed the cached state');
  t.equal(machineAuth.verifiedSize, 0, 'and the verified token');
  t.equal((await read(token)).status, 401, 'refused from then on');
  t.equal(caches.accessTokens.size, 0, 'the refusal (a null state) is not cached');

  // Many sync cycles: nothing outlives its time once swept.
  for (let i = 0; i < 5; i++) {
    const tk = await login(svc.url, seeded);
    t.equal((await read(tk)).status, 200);
  }
  t.equal(caches.accessTokens.size, 5);
  t.equal(caches.sweep(Date.now() + 61_000) >= 5, true, 'expired entries swept');
  t.equal(caches.accessTokens.size, 0);
  t.equal(caches.folders.size, 0);
});

t.test('a verified token is kept under the header that carried it; revocation refuses every spelling', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  const seeded = await seedHomelab(svc.services);
  const { machineAuth } = svc.services;
  const url = `${svc.url}/api/v3/secrets/raw?workspaceSlug=homelab&environment=prod&secretPath=/`;
  const read = (authorization: string) => request(url, { headers: { authorization } });

  const token = await login(svc.url, seeded);
  t.equal((await read(`Bearer ${token}`)).status, 200);
  t.equal((await read(`bearer   ${token}  `)).status, 200, 'another spelling of the header is parsed, then kept too');
  t.equal(machineAuth.verifiedSize, 2, 'one entry per header text');
  t.equal((await read(`Bearer ${token}`)).status, 200, 'a kept header answers again');
  t.equal((await read(`Bearer ${token}x`)).status, 401, 'a changed token is verified, not matched');
  t.equal((await read(`Bearer ${token}!`)).status, 401, 'a header that carries no token is refused');
  t.equal(machineAuth.verifiedSize, 2, 'refused headers are not kept');

  t.equal((await request(`${svc.url}/api/v1/auth/token/revoke`, { method: 'POST', json: { accessToken: token } })).status, 200);
  t.equal(machineAuth.verifiedSize, 1, 'revocation drops the header every client sends');
  t.equal((await read(`Bearer ${token}`)).status, 401, 'refused after revocation');
  t.equal((await read(`bearer   ${token}  `)).status, 401, 'the other spelling too, though its entry is still kept');
});
