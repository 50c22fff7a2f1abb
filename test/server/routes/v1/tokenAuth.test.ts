// Token Auth end to end, at Infisical's paths: an administrator attaches Token Auth,
// mints named tokens (shown once), lists, reads and renames them (never the token), and
// revokes them; a minted token reads secrets on ESO's path until it is revoked, expires,
// or has used up its uses.
import t from 'tap';
import { signupAdmin } from '../../../helpers/admin.js';
import { ESO_LIST_QUERY, request } from '../../../helpers/http.js';
import { seedHomelab, startTestService, testEnv } from '../../../helpers/service.js';

const CFG = (id: string) => `/api/v1/auth/token-auth/identities/${id}`;
const TOKEN = (id: string) => `/api/v1/auth/token-auth/tokens/${id}`;

async function setUp(t: any) {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const admin = (await signupAdmin(svc.url)).token;
  const seeded = await seedHomelab(svc.services);
  const call = (method: string, path: string, json?: unknown, token = admin) => request(`${svc.url}${path}`, { method, token, json });
  const read = (token: string) => request(`${svc.url}/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { token });
  const mint = (name?: string) => call('POST', `${CFG(seeded.identityId)}/tokens`, name === undefined ? {} : { name });
  return { svc, admin, seeded, call, read, mint };
}

t.test('attach, mint, list, read, rename, revoke: each route in Infisical shape', async (t) => {
  const { svc, seeded, call, read, mint } = await setUp(t);
  t.equal((await mint('x')).status, 404, 'no Token Auth yet');
  const attached = await call('POST', CFG(seeded.identityId), { accessTokenTTL: 3600, accessTokenMaxTTL: 7200, accessTokenNumUsesLimit: 0 });
  t.equal(attached.status, 200, JSON.stringify(attached.body));
  t.match(attached.body.identityTokenAuth, { id: seeded.identityId, identityId: seeded.identityId, accessTokenTTL: 3600, accessTokenMaxTTL: 7200, accessTokenNumUsesLimit: 0, accessTokenPeriod: 0 });
  t.same((await call('GET', CFG(seeded.identityId))).body, attached.body);
  t.equal((await call('POST', CFG(seeded.identityId), {})).status, 400, 'attached once');
  t.same((await call('GET', `/api/v1/identities/${seeded.identityId}`)).body.identity.authMethods, ['universal-auth', 'token-auth']);

  const created = await mint('eso-prod');
  t.equal(created.status, 200, JSON.stringify(created.body));
  t.same(Object.keys(created.body).sort(), ['accessToken', 'accessTokenMaxTTL', 'expiresIn', 'tokenData', 'tokenType']);
  t.match(created.body, { expiresIn: 3600, accessTokenMaxTTL: 7200, tokenType: 'Bearer' });
  t.match(created.body.tokenData, { name: 'eso-prod', identityId: seeded.identityId, authMethod: 'token-auth', accessTokenTTL: 3600, accessTokenMaxTTL: 7200, accessTokenNumUses: 0, isAccessTokenRevoked: false });
  const token = created.body.accessToken as string;
  const tokenId = created.body.tokenData.id as string;
  t.equal((await read(token)).status, 200, "a minted token reads on ESO's path");
  const second = await mint();
  t.equal(second.body.tokenData.name, null, 'unnamed');

  const listed = await call('GET', `${CFG(seeded.identityId)}/tokens`);
  t.equal(listed.status, 200);
  t.same(listed.body.tokens.map((x: any) => x.id), [tokenId, second.body.tokenData.id], 'oldest first');
  t.notOk(JSON.stringify(listed.body).includes(token), 'never the token');
  t.same((await call('GET', `${CFG(seeded.identityId)}/tokens?offset=1&limit=1`)).body.tokens.map((x: any) => x.id), [second.body.tokenData.id], 'paged');
  t.equal((await call('GET', `${CFG(seeded.identityId)}/tokens?limit=0`)).status, 422);

  t.match((await call('GET', TOKEN(tokenId))).body.token, { id: tokenId, name: 'eso-prod' });
  const renamed = await call('PATCH', TOKEN(tokenId), { name: 'eso-staging' });
  t.equal(renamed.status, 200, JSON.stringify(renamed.body));
  t.equal(renamed.body.token.name, 'eso-staging');
  t.equal((await call('PATCH', TOKEN(tokenId), { name: 'x'.repeat(257) })).status, 422);

  // Stored as every access token: the row names it, nothing holds the token.
  const sql = svc.services.store.sql;
  const dump = JSON.stringify(await sql`select * from identity_access_tokens`) + JSON.stringify(await sql`select metadata from audit_log`);
  t.notOk(dump.includes(token), 'neither the token table nor the audit trail holds the token');
  t.match(dump, /create-token-identity-token-auth|eso-prod/);

  const revoked = await call('POST', `${TOKEN(tokenId)}/revoke`);
  t.equal(revoked.status, 200, JSON.stringify(revoked.body));
  t.same(revoked.body, { message: 'Successfully revoked access token' });
  t.equal((await read(token)).status, 401, 'stops working at once');
  t.equal((await call('POST', `${TOKEN(tokenId)}/revoke`)).status, 404, 'revoked already (as Infisical)');
  t.same((await call('GET', `${CFG(seeded.identityId)}/tokens`)).body.tokens.map((x: any) => x.id), [second.body.tokenData.id], 'no longer listed');
  t.equal((await call('GET', TOKEN('not-a-uuid'))).status, 404);

  // Removing the method ends every token it minted.
  t.equal((await read(second.body.accessToken)).status, 200);
  t.equal((await call('DELETE', CFG(seeded.identityId))).status, 200);
  t.equal((await read(second.body.accessToken)).status, 401);
  t.equal((await call('GET', CFG(seeded.identityId))).status, 404);
});

t.test('use limits, TTL, trusted IPs, renew', async (t) => {
  const { svc, seeded, call, read, mint } = await setUp(t);
  t.equal((await call('POST', CFG(seeded.identityId), { accessTokenTTL: 60, accessTokenMaxTTL: 120, accessTokenNumUsesLimit: 2 })).status, 200);
  const limited = (await mint('two-uses')).body;
  t.equal((await read(limited.accessToken)).status, 200);
  t.equal((await read(limited.accessToken)).status, 200);
  t.equal((await read(limited.accessToken)).status, 401, 'its uses are used up');
  t.equal((await call('GET', TOKEN(limited.tokenData.id))).body.token.accessTokenNumUses, 2, 'uses counted');

  t.equal((await call('PATCH', CFG(seeded.identityId), { accessTokenNumUsesLimit: 0 })).status, 200);
  // Expired: its row's time is moved (the service's clock cannot be), before any read holds its state.
  const expiring = (await mint('expiring')).body;
  await svc.services.store.sql`update identity_access_tokens set expires_at = now() - interval '1 second' where id = ${expiring.tokenData.id}`;
  t.equal((await read(expiring.accessToken)).status, 401, 'an expired token is refused');

  const renewable = (await mint('renewable')).body;
  const renewed = await request(`${svc.url}/api/v1/auth/token/renew`, { method: 'POST', json: { accessToken: renewable.accessToken } });
  t.equal(renewed.status, 200, JSON.stringify(renewed.body));
  t.match(renewed.body, { expiresIn: 60, accessTokenMaxTTL: 120 }, 'renewed by the TTL of Token Auth');
  t.equal((await read(renewable.accessToken)).status, 200);
  t.equal((await call('PATCH', CFG(seeded.identityId), { accessTokenTrustedIps: [{ ipAddress: '203.0.113.0/24' }] })).status, 200);
  t.equal((await read(renewable.accessToken)).status, 403, 'trusted IPs apply at once to minted tokens');

  t.equal((await call('POST', CFG(seeded.identityId), {})).status, 400);
  t.equal((await call('PATCH', CFG(seeded.identityId), { accessTokenTTL: 500 })).status, 400, 'TTL above max TTL');
  t.equal((await call('PATCH', CFG(seeded.identityId), { accessTokenPeriod: 10 })).status, 422);
  t.equal((await call('POST', `${CFG(seeded.identityId)}/tokens`, { name: 'x', organizationSlug: 'other' })).status, 422, 'sub-organizations: refused by name');
});
