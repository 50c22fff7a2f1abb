// JWT Auth end to end, at Infisical's paths: a real local issuer (node:http, jose keys)
// signs Kubernetes-shaped service-account tokens; the service verifies them with static
// keys or the issuer's JWKS, checks the bindings, and issues access tokens that read
// secrets, renew within the max TTL, and die when JWT Auth is removed.
import { SignJWT } from 'jose';
import t from 'tap';
import { SYSTEM } from '../../../../server/domain/access.js';
import { signupAdmin } from '../../../helpers/admin.js';
import { ESO_LIST_QUERY, request, type JsonResponse } from '../../../helpers/http.js';
import { k8sClaims, makeKey, startIssuer, type Issuer } from '../../../helpers/issuer.js';
import { seedHomelab, startTestService, testEnv, type TestService } from '../../../helpers/service.js';

const CFG = (id: string) => `/api/v1/auth/jwt-auth/identities/${id}`;
const LOGIN = '/api/v1/auth/jwt-auth/login';
const SUB = 'system:serviceaccount:external-secrets:external-secrets';
const AUD = 'https://vault.example.test';

async function setUp(t: any, extra: Record<string, string> = {}) {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis', extra));
  const admin = (await signupAdmin(svc.url)).token;
  const seeded = await seedHomelab(svc.services);
  const issuer = await startIssuer(t);
  const call = (method: string, path: string, json?: unknown, token = admin) => request(`${svc.url}${path}`, { method, token, json });
  const login = (jwt: string, identityId = seeded.identityId) => request(`${svc.url}${LOGIN}`, { method: 'POST', json: { identityId, jwt } });
  const read = (token: string) => request(`${svc.url}/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { token });
  return { svc, admin, seeded, issuer, call, login, read };
}

const bound = (issuer: Issuer) => ({
  boundIssuer: issuer.url,
  boundSubject: SUB,
  boundAudiences: `https://other.example.test, ${AUD}`,
  boundClaims: { 'kubernetes.io.namespace': 'external-secrets', 'kubernetes.io.serviceaccount.name': 'external-*' },
});

function refused(t: any, r: JsonResponse, status: number, message: RegExp) {
  t.equal(r.status, status, JSON.stringify(r.body));
  t.match(r.body?.message, message);
  t.equal(r.body?.statusCode, status);
}

t.test('static keys: attach in Infisical shape, log in, read, bindings refused with their statuses', async (t) => {
  const { svc, seeded, issuer, call, login, read } = await setUp(t);
  const attach = await call('POST', CFG(seeded.identityId), {
    configurationType: 'static',
    publicKeys: [issuer.keys[0]!.spki],
    ...bound(issuer),
    boundAudiences: ` https://other.example.test ,${AUD}, `,
    accessTokenTTL: 600,
    accessTokenMaxTTL: 1200,
  });
  t.equal(attach.status, 200, JSON.stringify(attach.body));
  t.match(attach.body.identityJwtAuth, {
    id: seeded.identityId,
    identityId: seeded.identityId,
    configurationType: 'static',
    jwksUrl: '',
    jwksCaCert: '',
    publicKeys: [issuer.keys[0]!.spki.trim()],
    boundIssuer: issuer.url,
    boundAudiences: `https://other.example.test, ${AUD}`,
    boundClaims: { 'kubernetes.io.namespace': 'external-secrets', 'kubernetes.io.serviceaccount.name': 'external-*' },
    boundSubject: SUB,
    accessTokenTTL: 600,
    accessTokenMaxTTL: 1200,
    accessTokenNumUsesLimit: 0,
  });
  t.same((await call('GET', CFG(seeded.identityId))).body, attach.body, 'GET answers what was attached');
  t.equal((await call('POST', CFG(seeded.identityId), { configurationType: 'static', publicKeys: [issuer.keys[0]!.spki], ...bound(issuer) })).status, 400, 'attached once');
  const identity = (await call('GET', `/api/v1/identities/${seeded.identityId}`)).body.identity;
  t.same(identity.authMethods, ['universal-auth', 'jwt-auth'], 'the identity lists its methods');
  const membership = (await call('GET', `/api/v1/projects/${seeded.projectId}/memberships/identities/${seeded.identityId}`)).body;
  t.same(membership.identityMembership?.identity?.authMethods, ['universal-auth', 'jwt-auth'], `so does its membership: ${JSON.stringify(membership).slice(0, 200)}`);

  const ok = await login(await issuer.sign());
  t.equal(ok.status, 200, JSON.stringify(ok.body));
  t.same(Object.keys(ok.body).sort(), ['accessToken', 'accessTokenMaxTTL', 'expiresIn', 'tokenType']);
  t.match(ok.body, { expiresIn: 600, accessTokenMaxTTL: 1200, tokenType: 'Bearer' });
  const listed = await read(ok.body.accessToken);
  t.equal(listed.status, 200, 'the access token reads what the identity may read');
  t.equal(listed.body.secrets.length, 14);
  const [event] = await svc.services.store.sql<{ metadata: Record<string, unknown>; actorId: string }[]>`select metadata, actor_id from audit_log
    where event_type = 'login-identity-jwt-auth' order by id desc limit 1`;
  t.match(event, { actorId: seeded.identityId, metadata: { identityId: seeded.identityId, subject: SUB } });
  t.notMatch(JSON.stringify(event), /eyJ/, 'no token in the audit entry');

  const now = Math.floor(Date.now() / 1000);
  const claims = k8sClaims(issuer.url);
  const ns = (namespace: string, name = 'external-secrets') => ({ ...claims, 'kubernetes.io': { namespace, serviceaccount: { name } } });
  refused(t, await login(await issuer.sign(undefined, { exp: now - 3600 })), 401, /jwt expired/);
  refused(t, await login(await issuer.sign(undefined, { nbf: now + 3600, exp: now + 7200 })), 401, /not active/);
  refused(t, await login(await issuer.sign({ ...claims, iss: 'https://evil.example.test' })), 403, /issuer mismatch/);
  refused(t, await login(await issuer.sign({ ...claims, aud: 'https://someone-else.example.test' })), 401, /audience not allowed/);
  refused(t, await login(await issuer.sign({ ...claims, aud: undefined })), 401, /no audience/);
  refused(t, await login(await issuer.sign({ ...claims, sub: 'system:serviceaccount:default:default' })), 403, /subject not allowed/);
  refused(t, await login(await issuer.sign(ns('default'))), 401, /claim mismatch for field kubernetes.io.namespace/);
  refused(t, await login(await issuer.sign(ns('external-secrets', 'internal-secrets'))), 401, /claim mismatch for field kubernetes.io.serviceaccount.name/);
  t.equal((await login(await issuer.sign(ns('external-secrets', 'external-secrets-2')))).status, 200, 'the glob admits another matching name');
  refused(t, await login(await issuer.sign({ ...claims, 'kubernetes.io': undefined })), 401, /no kubernetes.io.namespace field/);
  refused(t, await login(await issuer.sign(undefined, { key: await makeKey('k1') })), 401, /invalid signature/);
  const hs = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('5m').sign(new TextEncoder().encode(issuer.keys[0]!.spki));
  refused(t, await login(hs), 401, /allowed algorithm/);
  const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ ...claims, exp: now + 600 })).toString('base64url')}.`;
  refused(t, await login(none), 401, /allowed algorithm/);
  refused(t, await login('not-a-jwt'), 401, /invalid JWT/);

  // Bad input: 4xx naming the field, nothing written.
  t.equal((await login('')).status, 422);
  t.equal((await request(`${svc.url}${LOGIN}`, { method: 'POST', json: { identityId: seeded.identityId } })).status, 422);
  t.equal((await login('x'.repeat(20_000))).status, 422);
  refused(t, await login(await issuer.sign(), 'not-a-uuid'), 404, /JWT Auth method not found/);
  const other = await svc.services.identities.create(SYSTEM, { name: 'no-jwt' });
  refused(t, await login(await issuer.sign(), other.id), 404, /JWT Auth method not found/);
  const [count] = await svc.services.store.sql<{ n: number }[]>`select count(*)::int as n from identity_access_tokens where auth_method = 'jwt-auth'`;
  t.equal(count!.n, 2, 'only the two accepted logins wrote a token');
});

t.test('configuration: refused input names the field; PATCH keeps what is not given', async (t) => {
  const { seeded, issuer, call } = await setUp(t);
  const id = seeded.identityId;
  const key = issuer.keys[0]!;
  const { privateKey } = await import('node:crypto').then((c) => c.generateKeyPairSync('ec', { namedCurve: 'P-256' }));
  const privatePem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const cases: Array<[unknown, number, RegExp]> = [
    [{ configurationType: 'static' }, 422, /publicKeys/],
    [{ configurationType: 'static', publicKeys: ['not a key'] }, 422, /publicKeys\[0\]/],
    [{ configurationType: 'static', publicKeys: [privatePem] }, 422, /publicKeys\[0\]/],
    [{ configurationType: 'static', publicKeys: [key.spki], jwksUrl: issuer.jwksUrl }, 422, /jwksUrl/],
    [{ configurationType: 'jwks', jwksUrl: 'file:///etc/passwd' }, 422, /jwksUrl/],
    [{ configurationType: 'jwks', jwksUrl: issuer.jwksUrl, publicKeys: [key.spki] }, 422, /publicKeys/],
    [{ configurationType: 'jwks', jwksUrl: issuer.jwksUrl, jwksCaCert: 'nope' }, 422, /jwksCaCert/],
    [{ configurationType: 'hmac', jwksUrl: issuer.jwksUrl }, 422, /configurationType/],
    [{ configurationType: 'jwks', jwksUrl: issuer.jwksUrl, claimMetadataMapping: {} }, 422, /claimMetadataMapping/],
    [{ configurationType: 'jwks', jwksUrl: issuer.jwksUrl, accessTokenTTL: 0 }, 422, /accessTokenTTL/],
    [{ configurationType: 'jwks', jwksUrl: issuer.jwksUrl, accessTokenTTL: 100, accessTokenMaxTTL: 50 }, 400, /TTL cannot be greater/],
    [{ configurationType: 'jwks', jwksUrl: issuer.jwksUrl, boundClaims: { '': 'x' } }, 422, /boundClaims/],
    [{ configurationType: 'jwks', jwksUrl: issuer.jwksUrl, boundClaims: { a: 1 } }, 422, /boundClaims/],
    [{ configurationType: 'jwks', jwksUrl: issuer.jwksUrl, accessTokenTrustedIps: [] }, 422, /accessTokenTrustedIps/],
    // Link-local and metadata addresses are never fetched, however spelled.
    ...[
      'http://169.254.169.254/latest/meta-data/',
      'http://0xa9fea9fe/jwks',
      'http://2852039166/jwks',
      'http://[::ffff:169.254.169.254]/jwks',
      'http://[fe80::1]/jwks',
      'http://[fd00:ec2::254]/jwks',
      'http://100.100.100.200/jwks',
      'http://metadata.google.internal/jwks',
    ].map((jwksUrl): [unknown, number, RegExp] => [{ configurationType: 'jwks', jwksUrl, ...bound(issuer) }, 422, /^jwksUrl: .* never fetched$/]),
  ];
  for (const [body, status, message] of cases) {
    const r = await call('POST', CFG(id), body);
    t.equal(r.status, status, `${JSON.stringify(body).slice(0, 80)} → ${JSON.stringify(r.body?.message)}`);
    t.match(r.body?.message, message);
  }
  t.equal((await call('GET', CFG(id))).status, 404, 'nothing was attached');
  t.equal((await call('POST', CFG('00000000-0000-4000-8000-000000000000'), { configurationType: 'jwks', jwksUrl: issuer.jwksUrl, ...bound(issuer) })).status, 404);

  const made = await call('POST', CFG(id), { configurationType: 'jwks', jwksUrl: issuer.jwksUrl, boundIssuer: issuer.url, boundSubject: SUB });
  t.equal(made.status, 200, JSON.stringify(made.body));
  t.match(made.body.identityJwtAuth, { accessTokenTTL: 2592000, accessTokenMaxTTL: 2592000, publicKeys: [], configurationType: 'jwks' });
  const patched = await call('PATCH', CFG(id), { accessTokenTTL: 60, boundClaims: { 'kubernetes.io.namespace': 'a,  b ,' } });
  t.equal(patched.status, 200, JSON.stringify(patched.body));
  t.match(patched.body.identityJwtAuth, { accessTokenTTL: 60, jwksUrl: issuer.jwksUrl, boundSubject: SUB, boundClaims: { 'kubernetes.io.namespace': 'a, b' } });
  const toStatic = await call('PATCH', CFG(id), { configurationType: 'static', publicKeys: [key.spki] });
  t.match(toStatic.body.identityJwtAuth, { configurationType: 'static', jwksUrl: '', publicKeys: [key.spki.trim()] }, 'switching type drops the JWKS URL');
  t.equal((await call('PATCH', CFG(id), { publicKeys: [] })).status, 422, 'a static configuration keeps at least one key');
  t.equal((await call('PATCH', CFG(id), { accessTokenTTL: 3_000_000 })).status, 400, 'the TTL pair is checked on the merged result');
  const toMetadata = await call('PATCH', CFG(id), { configurationType: 'jwks', jwksUrl: 'http://[::ffff:a9fe:a9fe]/latest/meta-data/' });
  t.equal(toMetadata.status, 422, 'an update to a metadata address is refused too');
  t.match(toMetadata.body?.message, /jwksUrl: .*169\.254\.169\.254.*link-local/);
  t.equal((await call('GET', CFG(id))).body.identityJwtAuth.accessTokenTTL, 60, 'a refused PATCH changed nothing');
});

t.test('configuration: it must bind the issuer and the subject or a claim (an audience alone is not enough)', async (t) => {
  const { seeded, issuer, call } = await setUp(t);
  const id = seeded.identityId;
  const jwks = { configurationType: 'jwks', jwksUrl: issuer.jwksUrl };
  const statik = { configurationType: 'static', publicKeys: [issuer.keys[0]!.spki] };
  const noIssuer = /boundIssuer is required/;
  const noSubject = /boundSubject or boundClaims is required/;
  const cases: Array<[unknown, RegExp[], RegExp[]]> = [
    [jwks, [noIssuer, noSubject], []],
    [statik, [noIssuer, noSubject], []],
    [{ ...jwks, boundAudiences: AUD }, [noIssuer, noSubject, /audience/], []],
    [{ ...statik, boundSubject: SUB, boundAudiences: AUD }, [noIssuer], [noSubject]],
    [{ ...jwks, boundClaims: { 'kubernetes.io.namespace': 'external-secrets' } }, [noIssuer], [noSubject]],
    [{ ...jwks, boundIssuer: issuer.url, boundAudiences: AUD }, [noSubject], [noIssuer]],
    [{ ...statik, boundIssuer: issuer.url }, [noSubject], [noIssuer]],
    [{ ...jwks, boundIssuer: issuer.url, boundSubject: '**' }, [noSubject], []],
    [{ ...jwks, boundIssuer: issuer.url, boundSubject: '*' }, [noSubject], []],
    [{ ...jwks, boundIssuer: issuer.url, boundClaims: { 'kubernetes.io.namespace': 'external-secrets, *' } }, [noSubject], []],
  ];
  for (const [body, named, notNamed] of cases) {
    const r = await call('POST', CFG(id), body);
    t.equal(r.status, 422, `${JSON.stringify(body).slice(0, 120)} → ${JSON.stringify(r.body?.message)}`);
    for (const m of named) t.match(r.body?.message, m);
    for (const m of notNamed) t.notMatch(r.body?.message, m);
  }
  t.equal((await call('GET', CFG(id))).status, 404, 'nothing was attached');

  // Issuer and a claim (no subject) is enough; so is issuer and subject.
  const made = await call('POST', CFG(id), { ...jwks, boundIssuer: issuer.url, boundClaims: { 'kubernetes.io.namespace': 'external-secrets' } });
  t.equal(made.status, 200, JSON.stringify(made.body));
  // An update is held to the same rule, on the merged result; a refused one changes nothing.
  const patches: Array<[unknown, RegExp]> = [
    [{ boundIssuer: '' }, noIssuer],
    [{ boundClaims: {} }, noSubject],
    [{ boundClaims: {}, boundAudiences: AUD }, noSubject],
    [{ boundClaims: {}, boundSubject: '**' }, noSubject],
  ];
  for (const [body, message] of patches) {
    const r = await call('PATCH', CFG(id), body);
    t.equal(r.status, 422, `PATCH ${JSON.stringify(body)} → ${JSON.stringify(r.body?.message)}`);
    t.match(r.body?.message, message);
  }
  t.same((await call('GET', CFG(id))).body, made.body, 'the refused PATCHes changed nothing');
  const swapped = await call('PATCH', CFG(id), { boundClaims: {}, boundSubject: SUB });
  t.equal(swapped.status, 200, 'the claim swapped for a subject in one PATCH');
});

t.test('a configuration stored before bindings were required does not log in until it binds', async (t) => {
  const { svc, seeded, issuer, call, login, read } = await setUp(t);
  const { DEFAULT_SETTINGS } = await import('../../../../server/domain/jwtAuth.js');
  // As a row of an earlier version: a JWKS and an audience, nothing else bound.
  await svc.services.store.jwtAuths.insert(seeded.identityId, 'jwt-auth', {
    ...DEFAULT_SETTINGS,
    configurationType: 'jwks',
    jwksUrl: issuer.jwksUrl,
    boundAudiences: AUD,
  });
  const anyone = await issuer.sign({ iss: 'https://token.actions.githubusercontent.com', sub: 'repo:stranger/repo:ref:refs/heads/main', aud: AUD });
  for (const jwt of [anyone, await issuer.sign()]) {
    refused(t, await login(jwt), 403, /must bind the issuer and the subject or a claim: boundIssuer is required.*boundSubject or boundClaims is required.*superadmin must PATCH/);
  }
  t.equal(issuer.hits.jwks, 0, 'refused before any key was fetched');
  const [count] = await svc.services.store.sql<{ n: number }[]>`select count(*)::int as n from identity_access_tokens where auth_method = 'jwt-auth'`;
  t.equal(count!.n, 0, 'no token was written');
  // Reading it still works; a PATCH that leaves it unbound is refused; one that binds it is taken.
  t.equal((await call('GET', CFG(seeded.identityId))).status, 200);
  refused(t, await call('PATCH', CFG(seeded.identityId), { accessTokenTTL: 60 }), 422, /boundIssuer is required/);
  t.equal((await call('PATCH', CFG(seeded.identityId), { boundIssuer: issuer.url, boundSubject: SUB })).status, 200);
  const ok = await login(await issuer.sign());
  t.equal(ok.status, 200, JSON.stringify(ok.body));
  t.equal((await read(ok.body.accessToken)).status, 200);
  refused(t, await login(anyone), 403, /issuer mismatch/);
});

t.test('JWKS: logins verified with the issuer key set; the issuer down is a 503 within the deadline', async (t) => {
  const { seeded, issuer, call, login, read } = await setUp(t, { REQUEST_DEADLINE_MS: '1000' });
  t.equal((await call('POST', CFG(seeded.identityId), { configurationType: 'jwks', jwksUrl: issuer.jwksUrl, ...bound(issuer) })).status, 200);
  const ok = await login(await issuer.sign());
  t.equal(ok.status, 200, JSON.stringify(ok.body));
  t.equal((await read(ok.body.accessToken)).status, 200);
  refused(t, await login(await issuer.sign(undefined, { key: await makeKey('unknown') })), 401, /no key of the issuer matches/);

  // A new JWKS URL (nothing cached) while the issuer hangs: the fetch deadline is half the request deadline.
  await call('PATCH', CFG(seeded.identityId), { jwksUrl: `${issuer.jwksUrl}?v=2` });
  issuer.mode = 'hang';
  const started = Date.now();
  const hung = await login(await issuer.sign());
  const took = Date.now() - started;
  refused(t, hung, 503, /JWKS could not be read/);
  t.equal(hung.headers.get('retry-after'), '5');
  t.ok(took < 1000, `answered within the request deadline (${took} ms)`);
  issuer.mode = 'up';
  await call('PATCH', CFG(seeded.identityId), { jwksUrl: `${issuer.jwksUrl}?v=3` });
  await issuer.stop();
  refused(t, await login(await issuer.sign()), 503, /JWKS could not be read/);
});

t.test('tokens: TTL, max TTL, renew, use limit; removing JWT Auth kills them at once', async (t) => {
  const { svc, seeded, issuer, call, login, read } = await setUp(t);
  t.equal((await call('POST', CFG(seeded.identityId), { configurationType: 'static', publicKeys: [issuer.keys[0]!.spki], ...bound(issuer), accessTokenTTL: 60, accessTokenMaxTTL: 120 })).status, 200);
  const first = await login(await issuer.sign());
  t.match(first.body, { expiresIn: 60, accessTokenMaxTTL: 120 });
  const [row] = await svc.services.store.sql<{ expiresAt: Date; maxExpiresAt: Date; clientSecretId: string | null }[]>`select expires_at, max_expires_at, client_secret_id
    from identity_access_tokens where auth_method = 'jwt-auth'`;
  t.equal(row!.clientSecretId, null, 'no client secret named');
  t.equal(Math.round((row!.maxExpiresAt.getTime() - row!.expiresAt.getTime()) / 1000), 60, 'max expiry 60 s past the expiry');

  const renewed = await request(`${svc.url}/api/v1/auth/token/renew`, { method: 'POST', json: { accessToken: first.body.accessToken } });
  t.equal(renewed.status, 200, JSON.stringify(renewed.body));
  t.match(renewed.body, { tokenType: 'Bearer', accessTokenMaxTTL: 120 });
  t.ok(renewed.body.expiresIn <= 60 && renewed.body.expiresIn > 0);
  t.equal((await read(renewed.body.accessToken)).status, 200, 'the renewed token reads (still bound to JWT Auth)');

  await call('PATCH', CFG(seeded.identityId), { accessTokenNumUsesLimit: 1 });
  const once = (await login(await issuer.sign())).body.accessToken;
  t.equal((await read(once)).status, 200);
  t.equal((await read(once)).status, 401, 'the use limit is counted');

  const other = (await login(await issuer.sign())).body.accessToken;
  const removed = await call('DELETE', CFG(seeded.identityId));
  t.equal(removed.status, 200, JSON.stringify(removed.body));
  t.notOk('publicKeys' in removed.body.identityJwtAuth, "Infisical's DELETE answer omits the keys");
  for (const token of [first.body.accessToken, renewed.body.accessToken, other]) t.equal((await read(token)).status, 401, 'dead once JWT Auth is removed');
  t.equal((await call('POST', CFG(seeded.identityId), { configurationType: 'static', publicKeys: [issuer.keys[0]!.spki], ...bound(issuer) })).status, 200);
  t.equal((await read(renewed.body.accessToken)).status, 401, 'attaching JWT Auth again does not revive them');
  t.equal((await call('GET', `/api/v3/secrets/raw?${ESO_LIST_QUERY}`, undefined, (await login(await issuer.sign())).body.accessToken)).status, 200, 'a new login works');
  refused(t, await call('DELETE', CFG('00000000-0000-4000-8000-000000000000')), 404, /not found/);
});

t.test('a Universal Auth token is not a JWT Auth token: binding by method', async (t) => {
  const { svc, seeded, issuer, call, read } = await setUp(t);
  const { identityTokens } = await import('../../../../server/auth/tokens.js');
  const tokens = identityTokens(Buffer.from(svc.env.AUTH_SECRET!, 'base64'));
  t.equal((await call('POST', CFG(seeded.identityId), { configurationType: 'static', publicKeys: [issuer.keys[0]!.spki], ...bound(issuer) })).status, 200);
  const jwtToken = (await request(`${svc.url}${LOGIN}`, { method: 'POST', json: { identityId: seeded.identityId, jwt: await issuer.sign() } })).body.accessToken;
  const claims = await tokens.verify(jwtToken);
  t.equal(claims.authMethod, 'jwt-auth');
  const exp = Math.floor(Date.now() / 1000) + 600;
  // The same row re-signed as a Universal Auth token (no method claim): refused.
  t.equal((await read(await tokens.sign({ identityId: claims.identityId, clientSecretId: '', tokenId: claims.tokenId, secret: claims.secret, exp }))).status, 401);
  t.equal((await read(await tokens.sign({ ...claims, authMethod: 'oidc-auth', exp }))).status, 401, 'nor as an OIDC token');
  t.equal((await read(jwtToken)).status, 200, 'the token as issued reads');
  await (svc as TestService).services.identities.delete(SYSTEM, seeded.identityId);
  t.equal((await read(jwtToken)).status, 401, 'dead with its identity');
});
