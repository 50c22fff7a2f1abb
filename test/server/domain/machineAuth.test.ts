// Memory of the machine-auth path: verified tokens and token states leave the caches
// when they expire or are revoked, and the sweep frees them without a request asking;
// a login leaves its new token's state cached, unless an invalidation raced it.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { identityTokens } from '../../../server/auth/tokens.js';
import { SYSTEM } from '../../../server/domain/access.js';
import { topics } from '../../../server/domain/caches.js';
import { rekeyMacKey } from '../../../server/domain/keyring.js';
import { machineAuth } from '../../../server/domain/machineAuth.js';
import type { Change } from '../../../server/domain/pipeline.js';
import { request } from '../../helpers/http.js';
import { BACKENDS, login, seedHomelab, startTestService, testEnv } from '../../helpers/service.js';

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

const tokenIdOf = (jwt: string): string => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()).jti;

for (const backend of BACKENDS) {
  t.test(`a login caches its new token's state once committed; not when an invalidation lands meanwhile, nor when refused (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend));
    const seeded = await seedHomelab(svc.services);
    const s = svc.services;
    const read = (token: string) => request(`${svc.url}/api/v3/secrets/raw?workspaceSlug=homelab&environment=prod&secretPath=/`, { token });
    let lookups = 0;
    const live = s.store.identities.liveAccessToken.bind(s.store.identities);
    s.store.identities.liveAccessToken = (id) => {
      lookups++;
      return live(id);
    };
    const cached = (id: string) => s.caches.accessTokens.get(id, () => Promise.reject(new Error('not cached')));

    const token = await login(svc.url, seeded);
    t.equal(s.caches.accessTokens.size, 1, 'the new token\'s state is cached at login');
    t.same(await cached(tokenIdOf(token)), await live(tokenIdOf(token)), 'as the database holds it');
    t.equal((await read(token)).status, 200);
    t.equal(lookups, 0, 'its first read asks the database nothing about it');

    const wrong = await request(`${svc.url}/api/v1/auth/universal-auth/login`, { method: 'POST', json: { clientId: seeded.clientId, clientSecret: 'f'.repeat(64) } });
    t.equal(wrong.status, 401);
    t.equal(s.caches.accessTokens.size, 1, 'a refused login caches nothing');

    // An invalidation of the token cache lands while the login's transaction runs (here
    // at the end of its body): the state is not cached, the first read looks it up.
    const auth = machineAuth({
      store: s.store,
      keyring: s.keyring,
      tokens: identityTokens(randomBytes(32)),
      caches: s.caches,
      changes: {
        ...s.changes,
        groupedByCaller: (actor, origin, key) => {
          const grant = s.changes.groupedByCaller(actor, origin, key);
          return {
            run: <T>(body: (c: Change) => Promise<T>) =>
              grant.run(async (c) => {
                const out = await body(c);
                s.caches.accessTokens.invalidateWhere(() => false);
                return out;
              }),
          };
        },
      },
      lockout: { maxAttempts: 3, seconds: 300 },
    });
    const raced = await auth.login({ clientId: seeded.clientId, clientSecret: seeded.clientSecret, ip: '127.0.0.1' });
    const racedId = tokenIdOf(raced.accessToken);
    await t.rejects(cached(racedId), /not cached/, 'not cached when an invalidation landed during the login');
    t.ok(await live(racedId), 'though the token was issued');
  });
}

t.test('a login keeps its token as verified, with the claims verifying it gives: the first read verifies nothing', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  const seeded = await seedHomelab(svc.services);
  const s = svc.services;
  const real = identityTokens(randomBytes(32));
  let verifications = 0;
  const tokens = { ...real, verify: (token: string) => (verifications++, real.verify(token)) };
  const auth = machineAuth({ store: s.store, keyring: s.keyring, tokens, caches: s.caches, changes: s.changes, lockout: { maxAttempts: 3, seconds: 300 } });

  const { accessToken } = await auth.login({ clientId: seeded.clientId, clientSecret: seeded.clientSecret, ip: '127.0.0.1' });
  t.equal(auth.verifiedSize, 1, 'kept at login');
  const actor = await auth.authenticate(`Bearer ${accessToken}`, { ip: '127.0.0.1' });
  t.equal(verifications, 0, 'the header every client sends is answered from what the login kept');
  const claims = await real.verify(accessToken);
  t.same(actor, { kind: 'identity', identityId: claims.identityId, tokenId: claims.tokenId, clientSecretId: claims.clientSecretId }, 'the actor verifying the token gives');

  // Another spelling of the header, or the token altered, is verified as before.
  await auth.authenticate(`bearer  ${accessToken}`, { ip: '127.0.0.1' });
  t.equal(verifications, 1, 'another header text is verified');
  await t.rejects(async () => auth.authenticate(`Bearer ${accessToken.slice(0, -2)}xx`, { ip: '127.0.0.1' }), { code: 'TOKEN_INVALID' });
  t.equal(verifications, 2, 'an altered token is verified, and refused');

  await auth.revoke(accessToken);
  await t.rejects(async () => auth.authenticate(`Bearer ${accessToken}`, { ip: '127.0.0.1' }), { code: 'TOKEN_INVALID' }, 'revoked: refused');
});

t.test('a known client\'s login lookup is cached until its identity changes or the MAC key moves; a stale key never moves a secret back', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  const seeded = await seedHomelab(svc.services);
  const s = svc.services;
  let lookups = 0;
  const lookup = s.store.identities.loginLookup.bind(s.store.identities);
  s.store.identities.loginLookup = (clientId) => {
    lookups++;
    return lookup(clientId);
  };
  const loginWith = (clientId: string, clientSecret: string) =>
    request(`${svc.url}/api/v1/auth/universal-auth/login`, { method: 'POST', json: { clientId, clientSecret } });
  const macKeyOf = async (secretId: string) =>
    (await s.db.sql<{ macKeyId: string }[]>`select mac_key_id from identity_client_secrets where id = ${secretId}`)[0]!.macKeyId;

  t.equal((await loginWith(seeded.clientId, seeded.clientSecret)).status, 200);
  t.equal((await loginWith(seeded.clientId, seeded.clientSecret)).status, 200);
  t.equal((await loginWith(seeded.clientId.toUpperCase(), 'f'.repeat(64))).status, 401, 'a wrong secret is still refused (decided by the claim)');
  t.equal(lookups, 1, 'one lookup for three logins of the same client (its id in any case)');

  const unknown = '00000000-0000-4000-8000-000000000000';
  t.equal((await loginWith(unknown, seeded.clientSecret)).status, 401);
  t.equal((await loginWith(unknown, seeded.clientSecret)).status, 401);
  t.equal(lookups, 3, 'an unknown client id is looked up every time (never cached)');

  // The identity's settings change: its entry goes at once.
  const allowed = (await s.identities.getUniversalAuth(SYSTEM, seeded.identityId)).clientSecretTrustedIps;
  await s.identities.updateUniversalAuth(SYSTEM, seeded.identityId, { clientSecretTrustedIps: [{ ipAddress: '10.0.0.0', type: 'ipv4', prefix: 8 }] });
  t.equal((await loginWith(seeded.clientId, seeded.clientSecret)).status, 403, 'narrowed trusted IPs refuse the next login');
  t.equal(lookups, 4, 'read again after the change');
  await s.identities.updateUniversalAuth(SYSTEM, seeded.identityId, { clientSecretTrustedIps: allowed });
  t.equal((await loginWith(seeded.clientId, seeded.clientSecret)).status, 200, 'widened again: admitted');
  t.equal(lookups, 5);

  // A MAC key rotation this replica has not heard of yet (no invalidation published): the
  // cached lookup holds the old key. A secret made since, under the new key, logs in (the
  // claim's undecided path compares it under its own key) and is not moved back to the old one.
  const [first] = await s.db.sql<{ id: string }[]>`select id from identity_client_secrets where identity_id = ${seeded.identityId} order by created_at limit 1`;
  const oldKey = (await s.db.sql<{ keyId: string }[]>`select key_id from crypto_canary where id = 1`)[0]!.keyId;
  await s.store.transaction((tx) => rekeyMacKey(tx, s.crypto));
  const made = await s.identities.createClientSecret(SYSTEM, seeded.identityId);
  const newKey = await macKeyOf(made.clientSecretData.id);
  t.not(newKey, oldKey, 'the new secret is made under the new key');
  t.equal((await loginWith(seeded.clientId, made.clientSecret)).status, 200, 'it logs in through the stale lookup');
  t.equal(lookups, 5, 'which was cached');
  t.equal(await macKeyOf(made.clientSecretData.id), newKey, 'and keeps its key (not re-MACed under the old one)');
  const [entry] = await s.db.sql<{ metadata: Record<string, unknown> }[]>`select metadata from audit_log
    where event_type = 'login-identity-universal-auth' order by id desc limit 1`;
  t.equal(entry!.metadata.macKeyUpgraded, undefined, 'its audit entry claims no upgrade');

  // Told of the rotation: the next login reads the current key, and the older secret moves to it.
  await s.bus.publish(topics.macKey, '');
  t.equal((await loginWith(seeded.clientId, seeded.clientSecret)).status, 200);
  t.equal(lookups, 6, 'read again after the MAC key moved');
  t.equal(await macKeyOf(first!.id), newKey, 'the older secret is re-MACed under the current key');
});

t.test('a held token answers as a value; every refusal is a rejected promise; a use-limited token counts each use', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  const seeded = await seedHomelab(svc.services);
  const s = svc.services;
  await s.identities.updateUniversalAuth(SYSTEM, seeded.identityId, { accessTokenTrustedIps: [{ ipAddress: '127.0.0.1', type: 'ipv4', prefix: 32 }] });
  const header = `Bearer ${(await s.machineAuth.login({ clientId: seeded.clientId, clientSecret: seeded.clientSecret, ip: '127.0.0.1' })).accessToken}`;

  const held = s.machineAuth.authenticate(header, { ip: '127.0.0.1' });
  t.notOk(held instanceof Promise, 'held claims and state: a value, no promise');
  t.equal((held as Awaited<typeof held>).identityId, seeded.identityId);
  const elsewhere = s.machineAuth.authenticate(header, { ip: '10.1.1.1' });
  t.ok(elsewhere instanceof Promise, 'a held token from an address its list refuses: a promise');
  await t.rejects(elsewhere as Promise<unknown>, { code: 'FORBIDDEN' });
  const missing = s.machineAuth.authenticate('', { ip: '127.0.0.1' });
  t.ok(missing instanceof Promise);
  await t.rejects(missing as Promise<unknown>, { code: 'UNAUTHORIZED' });

  await s.identities.updateUniversalAuth(SYSTEM, seeded.identityId, { accessTokenNumUsesLimit: 2 });
  const limited = `Bearer ${(await s.machineAuth.login({ clientId: seeded.clientId, clientSecret: seeded.clientSecret, ip: '127.0.0.1' })).accessToken}`;
  for (const n of [1, 2]) {
    const used = s.machineAuth.authenticate(limited, { ip: '127.0.0.1' });
    t.ok(used instanceof Promise, `use ${n} of a limited token is counted in a statement`);
    await used;
  }
  await t.rejects(async () => s.machineAuth.authenticate(limited, { ip: '127.0.0.1' }), { code: 'UNAUTHORIZED' }, 'the third use is refused');
});
