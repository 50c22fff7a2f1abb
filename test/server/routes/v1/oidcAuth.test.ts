// OIDC Auth end to end, at Infisical's paths: the service finds the provider's keys
// through its discovery document (a real local server, as a Kubernetes API server
// serves it), verifies ID tokens, checks the issuer against the binding or, when none
// is bound, against the provider's own issuer, and issues access tokens.
import t from 'tap';
import { signupAdmin } from '../../../helpers/admin.js';
import { ESO_LIST_QUERY, request, type JsonResponse } from '../../../helpers/http.js';
import { k8sClaims, startIssuer } from '../../../helpers/issuer.js';
import { startService } from '../../../../server/app.js';
import { parseConfig } from '../../../../server/config.js';
import { quietLog, seedHomelab, startTestService, testEnv } from '../../../helpers/service.js';

const CFG = (id: string) => `/api/v1/auth/oidc-auth/identities/${id}`;
const LOGIN = '/api/v1/auth/oidc-auth/login';

function refused(t: any, r: JsonResponse, status: number, message: RegExp) {
  t.equal(r.status, status, JSON.stringify(r.body));
  t.match(r.body?.message, message);
}

t.test('OIDC Auth: discovery, login, issuer checks, provider down, removal', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis', { REQUEST_DEADLINE_MS: '1000' }));
  const admin = (await signupAdmin(svc.url)).token;
  const seeded = await seedHomelab(svc.services);
  const issuer = await startIssuer(t);
  const call = (method: string, path: string, json?: unknown) => request(`${svc.url}${path}`, { method, token: admin, json });
  const login = async (jwt: string) => request(`${svc.url}${LOGIN}`, { method: 'POST', json: { identityId: seeded.identityId, jwt, organizationSlug: 'ignored' } });
  const read = (token: string) => request(`${svc.url}/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { token });

  for (const [body, status, message] of [
    [{}, 422, /oidcDiscoveryUrl/],
    [{ oidcDiscoveryUrl: 'ftp://issuer.example.test' }, 422, /oidcDiscoveryUrl/],
    [{ oidcDiscoveryUrl: issuer.url, caCert: 'not a certificate' }, 422, /caCert/],
    [{ oidcDiscoveryUrl: issuer.url, claimMetadataMapping: { team: 'team' } }, 422, /claimMetadataMapping/],
    [{ oidcDiscoveryUrl: issuer.url, configurationType: 'jwks' }, 422, /configurationType/],
    // The discovery document's issuer is bound; the subject or a claim must be too.
    [{ oidcDiscoveryUrl: issuer.url }, 422, /OIDC Auth must bind the issuer and the subject or a claim: boundSubject or boundClaims is required/],
    [{ oidcDiscoveryUrl: issuer.url, boundAudiences: 'https://vault.example.test' }, 422, /boundSubject or boundClaims is required/],
    [{ oidcDiscoveryUrl: issuer.url, boundIssuer: issuer.url, boundAudiences: 'https://vault.example.test' }, 422, /boundSubject or boundClaims is required/],
    [{ oidcDiscoveryUrl: issuer.url, boundSubject: '**' }, 422, /boundSubject or boundClaims is required/],
    // Link-local and metadata addresses are never fetched, however spelled.
    ...['http://169.254.169.254', 'http://0251.0376.0251.0376', 'http://[::ffff:169.254.169.254]', 'http://[fd00:ec2::254]', 'http://metadata.google.internal'].map(
      (oidcDiscoveryUrl): [unknown, number, RegExp] => [{ oidcDiscoveryUrl, boundSubject: 'x' }, 422, /^oidcDiscoveryUrl: .* never fetched$/],
    ),
  ] as Array<[unknown, number, RegExp]>) {
    refused(t, await call('POST', CFG(seeded.identityId), body), status, message);
  }

  const attach = await call('POST', CFG(seeded.identityId), {
    oidcDiscoveryUrl: issuer.url,
    boundSubject: 'system:serviceaccount:external-secrets:*',
    boundAudiences: 'https://vault.example.test',
    accessTokenTTL: 300,
  });
  t.equal(attach.status, 200, JSON.stringify(attach.body));
  t.match(attach.body.identityOidcAuth, {
    id: seeded.identityId,
    identityId: seeded.identityId,
    oidcDiscoveryUrl: issuer.url,
    caCert: '',
    boundIssuer: '',
    boundAudiences: 'https://vault.example.test',
    boundClaims: {},
    boundSubject: 'system:serviceaccount:external-secrets:*',
    accessTokenTTL: 300,
    accessTokenMaxTTL: 2592000,
  });
  t.same((await call('GET', CFG(seeded.identityId))).body, attach.body);
  refused(t, await call('PATCH', CFG(seeded.identityId), { boundSubject: '' }), 422, /boundSubject or boundClaims is required/);
  t.same((await call('GET', CFG(seeded.identityId))).body, attach.body, 'the refused PATCH changed nothing');

  const ok = await login(await issuer.sign());
  t.equal(ok.status, 200, JSON.stringify(ok.body));
  t.match(ok.body, { expiresIn: 300, accessTokenMaxTTL: 2592000, tokenType: 'Bearer' });
  t.equal((await read(ok.body.accessToken)).status, 200);
  t.equal(issuer.hits.discovery, 1);

  const claims = k8sClaims(issuer.url);
  refused(t, await login(await issuer.sign({ ...claims, iss: 'https://elsewhere.example.test' })), 403, /issuer mismatch/);
  refused(t, await login(await issuer.sign({ ...claims, sub: 'system:serviceaccount:default:default' })), 403, /subject not allowed/);
  refused(t, await login(await issuer.sign({ ...claims, aud: 'sts.amazonaws.com' })), 401, /audience not allowed/);

  // A bound issuer replaces the provider's: the token must name the bound one.
  t.equal((await call('PATCH', CFG(seeded.identityId), { boundIssuer: 'https://kubernetes.default.svc' })).status, 200);
  refused(t, await login(await issuer.sign()), 403, /issuer mismatch/);
  t.equal((await login(await issuer.sign({ ...claims, iss: 'https://kubernetes.default.svc' }))).status, 200);
  t.equal((await call('PATCH', CFG(seeded.identityId), { boundIssuer: '' })).status, 200);

  // Another provider URL while it is down: 503 within the deadline, never a 401 or a 200.
  const down = await startIssuer(t);
  t.equal((await call('PATCH', CFG(seeded.identityId), { oidcDiscoveryUrl: down.url })).status, 200);
  down.mode = 'hang';
  const started = Date.now();
  const hung = await login(await down.sign());
  refused(t, hung, 503, /discovery document could not be read/);
  t.ok(Date.now() - started < 1000, 'within the request deadline');
  await down.stop();

  const token = (await (async () => {
    await call('PATCH', CFG(seeded.identityId), { oidcDiscoveryUrl: issuer.url });
    return login(await issuer.sign());
  })()).body.accessToken;
  t.equal((await read(token)).status, 200);
  const removed = await call('DELETE', CFG(seeded.identityId));
  t.equal(removed.status, 200, JSON.stringify(removed.body));
  t.equal((await read(token)).status, 401, 'the tokens OIDC Auth issued die with it');
  t.equal((await read(ok.body.accessToken)).status, 401);
  refused(t, await login(await issuer.sign()), 404, /OIDC Auth method not found/);
  // Universal Auth of the same identity is untouched.
  const ua = await request(`${svc.url}/api/v1/auth/universal-auth/login`, { method: 'POST', json: { clientId: seeded.clientId, clientSecret: seeded.clientSecret } });
  t.equal((await read(ua.body.accessToken)).status, 200, 'Universal Auth still logs in and reads');
});

t.test('OIDC Auth stored before bindings were required (a discovery URL alone) does not log in', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const admin = (await signupAdmin(svc.url)).token;
  const seeded = await seedHomelab(svc.services);
  const issuer = await startIssuer(t);
  const { DEFAULT_SETTINGS } = await import('../../../../server/domain/jwtAuth.js');
  await svc.services.store.jwtAuths.insert(seeded.identityId, 'oidc-auth', { ...DEFAULT_SETTINGS, oidcDiscoveryUrl: issuer.url });
  const login = async () => request(`${svc.url}${LOGIN}`, { method: 'POST', json: { identityId: seeded.identityId, jwt: await issuer.sign() } });
  refused(t, await login(), 403, /OIDC Auth must bind the issuer and the subject or a claim: boundSubject or boundClaims is required.*superadmin must PATCH/);
  t.equal(issuer.hits.discovery + issuer.hits.jwks, 0, 'refused before anything was fetched');
  const patched = await request(`${svc.url}${CFG(seeded.identityId)}`, { method: 'PATCH', token: admin, json: { boundSubject: 'system:serviceaccount:external-secrets:*' } });
  t.equal(patched.status, 200, JSON.stringify(patched.body));
  t.equal((await login()).status, 200, 'logs in once bound');
});

t.test('a discovery document that names keys elsewhere: the login answers 503 and the log says why; a listed origin is fetched', async (t) => {
  const lines: Array<Record<string, unknown>> = [];
  const log = { ...quietLog, warn: (fields: unknown) => void lines.push(fields as Record<string, unknown>) };
  const provider = await startIssuer(t);
  const elsewhere = await startIssuer(t);
  elsewhere.keys = provider.keys;
  const env = await testEnv(t, 'postgres+redis', { OIDC_JWKS_ALLOWED_ORIGINS: '' });
  const svc = await startService(parseConfig(env), log);
  t.teardown(() => svc.close());
  const url = `http://127.0.0.1:${svc.port}`;
  const admin = (await signupAdmin(url)).token;
  const seeded = await seedHomelab(svc.services);
  const attach = await request(`${url}${CFG(seeded.identityId)}`, {
    method: 'POST',
    token: admin,
    json: { oidcDiscoveryUrl: provider.url, boundSubject: 'system:serviceaccount:external-secrets:*' },
  });
  t.equal(attach.status, 200, JSON.stringify(attach.body));
  const login = async () => request(`${url}${LOGIN}`, { method: 'POST', json: { identityId: seeded.identityId, jwt: await provider.sign() } });

  provider.jwksUri = elsewhere.jwksUrl;
  const r = await login();
  refused(t, r, 503, /OIDC discovery document could not be read/);
  t.equal(r.headers.get('retry-after'), '5');
  t.equal(elsewhere.hits.jwks, 0, 'the other host was not fetched');
  const line = lines.find((l) => l.event === 'jwt-key-source-refused');
  t.match(line, { source: 'OIDC discovery document', url: `${provider.url}/.well-known/openid-configuration`, reason: /is not the discovery document's origin/ });
  const [tokens] = await svc.services.store.sql<{ n: number }[]>`select count(*)::int as n from identity_access_tokens where auth_method = 'oidc-auth'`;
  t.equal(tokens!.n, 0, 'no token was written');

  // The same document, on a service that lists the other origin.
  const env2 = await testEnv(t, 'postgres+redis', { OIDC_JWKS_ALLOWED_ORIGINS: new URL(elsewhere.url).origin });
  const listed = await startService(parseConfig(env2), quietLog);
  t.teardown(() => listed.close());
  const url2 = `http://127.0.0.1:${listed.port}`;
  const admin2 = (await signupAdmin(url2)).token;
  const seeded2 = await seedHomelab(listed.services);
  t.equal((await request(`${url2}${CFG(seeded2.identityId)}`, { method: 'POST', token: admin2, json: { oidcDiscoveryUrl: provider.url, boundSubject: 'system:serviceaccount:external-secrets:*' } })).status, 200);
  const ok = await request(`${url2}${LOGIN}`, { method: 'POST', json: { identityId: seeded2.identityId, jwt: await provider.sign() } });
  t.equal(ok.status, 200, JSON.stringify(ok.body));
  t.equal(elsewhere.hits.jwks, 1, 'the listed origin was fetched');
});
