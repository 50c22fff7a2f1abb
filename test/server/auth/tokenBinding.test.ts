// A token is bound to its row: subject, kind and identity must all match the live row
// its id names, or the answer is 401. So AUTH_SECRET alone (a leaked bootstrap Secret)
// cannot mint access: a token re-signed with another subject, another kind or a row that
// does not exist is refused, and a revoke cannot reach another identity's token.
import t from 'tap';
import { identityTokens, newTokenSecret, userSessionTokens } from '../../../server/auth/tokens.js';
import { signupAdmin } from '../../helpers/admin.js';
import { request } from '../../helpers/http.js';
import { login, seedHomelab, startTestService, testEnv } from '../../helpers/service.js';
import { machine, plainUser } from '../admin/helpers.js';

t.test('tokens re-signed with AUTH_SECRET are refused unless they match their row', async (t) => {
  const env = await testEnv(t, 'postgres+redis');
  const svc = await startTestService(t, env);
  const authSecret = Buffer.from(env.AUTH_SECRET!, 'base64');
  const sessions = userSessionTokens(authSecret);
  const identities = identityTokens(authSecret);
  const exp = Math.floor(Date.now() / 1000) + 3600;

  const admin = await signupAdmin(svc.url);
  const seeded = await seedHomelab(svc.services); // homelab, with homelab-eso as member
  const plain = await plainUser(svc, 'plain@example.test'); // a member of nothing
  const sessionIdOf = async (token: string) => (await sessions.verify(token)).sessionId;
  const homelab = `/api/v1/projects/${seeded.projectId}`;
  const get = (path: string, token: string) => request(`${svc.url}${path}`, { token });

  t.equal((await get(homelab, plain.token)).status, 404, 'the plain user may not read homelab (not a member: as a missing project)');
  t.equal((await get(homelab, admin.token)).status, 200, 'the superadmin may');

  await t.test('a session re-signed with another subject', async (t) => {
    // The plain user's own session (secret part included), re-signed for the superadmin.
    const forged = await sessions.sign({ ...(await sessions.verify(plain.token)), userId: admin.userId, exp });
    const r = await get(homelab, forged);
    t.equal(r.status, 401, "the plain user's live session does not become the superadmin's");
    t.equal(r.body.error, 'TokenError');
    t.equal((await get('/api/v1/projects', forged)).status, 401, 'nor lists every project');
  });

  await t.test('a token of another kind naming a live row of the other kind', async (t) => {
    const eso = await login(svc.url, seeded);
    const esoClaims = await identities.verify(eso);
    const asSession = await sessions.sign({ userId: admin.userId, sessionId: esoClaims.tokenId, secret: esoClaims.secret, exp });
    t.equal((await get(homelab, asSession)).status, 401, 'an access token id is not a session');
    const asAccessToken = await identities.sign({
      identityId: seeded.identityId,
      clientSecretId: esoClaims.clientSecretId,
      tokenId: await sessionIdOf(admin.token),
      secret: (await sessions.verify(admin.token)).secret,
      exp,
    });
    t.equal((await get(`/api/v3/secrets/raw?workspaceSlug=homelab&environment=prod`, asAccessToken)).status, 401, 'a session id is not an access token');
  });

  await t.test('a row that does not exist, or no longer does', async (t) => {
    const made = await sessions.sign({ userId: admin.userId, sessionId: '00000000-0000-4000-8000-000000000000', secret: newTokenSecret().secret, exp });
    t.equal((await get(homelab, made)).status, 401, 'a session id that was never issued');
    const other = await plainUser(svc, 'leaving@example.test');
    t.equal((await request(`${svc.url}/api/v1/auth/logout`, { method: 'POST', token: other.token })).status, 200);
    const revived = await sessions.sign({ ...(await sessions.verify(other.token)), exp: exp + 60 });
    t.equal((await get('/api/v1/users/me', revived)).status, 401, 'an ended session stays ended, whatever its new expiry');
  });

  await t.test('an access token re-signed for another identity or client secret', async (t) => {
    const reader = await machine(svc, 'reader', [[seeded.projectId, 'no-access']]);
    const readerClaims = await identities.verify(reader.token);
    const list = (token: string) => get(`/api/v3/secrets/raw?workspaceSlug=homelab&environment=prod`, token);
    t.equal((await list(reader.token)).status, 403, 'the reader may not read homelab');
    const asEso = await identities.sign({ ...readerClaims, identityId: seeded.identityId, exp });
    const r = await list(asEso);
    t.equal(r.status, 401, "the reader's live token does not become homelab-eso's");
    t.equal(r.body.error, 'TokenError');
    const eso = await login(svc.url, seeded);
    const esoClaims = await identities.verify(eso);
    const otherSecret = await identities.sign({ ...readerClaims, clientSecretId: esoClaims.clientSecretId, exp });
    t.equal((await list(otherSecret)).status, 401, 'nor with another client secret');
    // Bound by method: the Universal Auth row re-signed as a JWT / OIDC Auth token (no client secret).
    for (const authMethod of ['jwt-auth', 'oidc-auth'] as const) {
      t.equal((await list(await identities.sign({ ...readerClaims, authMethod, exp }))).status, 401, `nor as a ${authMethod} token`);
      t.equal((await list(await identities.sign({ ...readerClaims, clientSecretId: '', authMethod, exp }))).status, 401, `nor as a ${authMethod} token without its secret`);
    }
  });

  await t.test("a revoke cannot reach another identity's token", async (t) => {
    const eso = await login(svc.url, seeded);
    const esoClaims = await identities.verify(eso);
    const attacker = await machine(svc, 'attacker');
    const attackerClaims = await identities.verify(attacker.token);
    const forged = await identities.sign({ ...attackerClaims, tokenId: esoClaims.tokenId, exp });
    await request(`${svc.url}/api/v1/auth/token/revoke`, { method: 'POST', json: { accessToken: forged } });
    t.equal((await get(`/api/v3/secrets/raw?workspaceSlug=homelab&environment=prod`, eso)).status, 200, "homelab-eso's token still works");
  });
});
