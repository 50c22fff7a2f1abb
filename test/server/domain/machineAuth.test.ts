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
