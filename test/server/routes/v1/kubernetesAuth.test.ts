// Kubernetes Auth end to end, at Infisical's paths: a fake Kubernetes API server of our
// own (test/helpers/kubeApiServer.ts: node:https, a CA made by openssl, TokenReview as
// kube-apiserver answers it) reviews service-account tokens; the service applies the
// bindings and issues access tokens that read secrets and die with the method or the
// identity. Faults of the API server are 503, never a verdict on the token.
import t from 'tap';
import { signupAdmin } from '../../../helpers/admin.js';
import { ESO_LIST_QUERY, request, type JsonResponse } from '../../../helpers/http.js';
import { saUsername, startKubeApi } from '../../../helpers/kubeApiServer.js';
import { seedHomelab, startTestService, testEnv } from '../../../helpers/service.js';

const CFG = (id: string) => `/api/v1/auth/kubernetes-auth/identities/${id}`;
const LOGIN = '/api/v1/auth/kubernetes-auth/login';
const AUD = 'https://vault.example.test';
const REVIEWER = 'reviewer-service-account-token-0123456789';
const ESO_TOKEN = 'eso-service-account-token-abcdef';

async function setUp(t: any) {
  // The review's deadline is half the request deadline (at most 3 s): 2 s here.
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis', { REQUEST_DEADLINE_MS: '4000' }));
  const admin = (await signupAdmin(svc.url)).token;
  const seeded = await seedHomelab(svc.services);
  const kube = await startKubeApi(t);
  kube.tokens.set(REVIEWER, { username: saUsername('kube-system', 'token-reviewer'), audiences: ['https://kubernetes.default.svc'], canReview: true });
  kube.tokens.set(ESO_TOKEN, { username: saUsername('external-secrets', 'external-secrets'), audiences: [AUD] });
  const call = (method: string, path: string, json?: unknown, token = admin) => request(`${svc.url}${path}`, { method, token, json });
  const login = (jwt: string, identityId = seeded.identityId) => request(`${svc.url}${LOGIN}`, { method: 'POST', json: { identityId, jwt } });
  const read = (token: string) => request(`${svc.url}/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { token });
  const attach = (body: Record<string, unknown> = {}) =>
    call('POST', CFG(seeded.identityId), {
      kubernetesHost: kube.url,
      caCert: kube.ca,
      tokenReviewerJwt: REVIEWER,
      allowedNamespaces: 'external-secrets, other-ns',
      allowedNames: 'external-*',
      allowedAudience: AUD,
      ...body,
    });
  return { svc, admin, seeded, kube, call, login, read, attach };
}

function refused(t: any, r: JsonResponse, status: number, message: RegExp) {
  t.equal(r.status, status, JSON.stringify(r.body));
  t.match(r.body?.message, message);
  t.equal(r.body?.statusCode, status);
}

t.test('attach, log in with a reviewed service-account token, read; the reviewer JWT is sealed and never answered', async (t) => {
  const { svc, seeded, kube, call, login, read, attach } = await setUp(t);
  const attached = await attach({ accessTokenTTL: 600, accessTokenMaxTTL: 1200, tokenReviewMode: 'api', gatewayId: null });
  t.equal(attached.status, 200, JSON.stringify(attached.body));
  t.match(attached.body.identityKubernetesAuth, {
    id: seeded.identityId,
    identityId: seeded.identityId,
    kubernetesHost: kube.url,
    caCert: kube.ca.trim(),
    tokenReviewerJwt: '',
    tokenReviewMode: 'api',
    allowedNamespaces: 'external-secrets, other-ns',
    allowedNames: 'external-*',
    allowedAudience: AUD,
    accessTokenTTL: 600,
    accessTokenMaxTTL: 1200,
  });
  t.same((await call('GET', CFG(seeded.identityId))).body, attached.body, 'GET answers what was attached (never the reviewer JWT)');
  t.equal((await attach()).status, 400, 'attached once');
  t.same((await call('GET', `/api/v1/identities/${seeded.identityId}`)).body.identity.authMethods, ['universal-auth', 'kubernetes-auth']);

  // Stored sealed: the database holds no byte of it; the audit trail names only that one is set.
  const sql = svc.services.store.sql;
  const [row] = await sql`select token_reviewer_jwt, data_key_id from identity_kubernetes_auths where identity_id = ${seeded.identityId}`;
  t.ok(Buffer.isBuffer(row!.tokenReviewerJwt) && !row!.tokenReviewerJwt.includes(REVIEWER), 'the reviewer JWT is a sealed blob');
  t.equal((await sql`select purpose from crypto_keys where id = ${row!.dataKeyId}`)[0]?.purpose, 'identity', 'under a data key of its own');
  const trail = JSON.stringify(await sql`select metadata from audit_log where event_type like '%kubernetes-auth%'`);
  t.notOk(trail.includes(REVIEWER), 'the audit trail never holds it');
  t.match(trail, /"tokenReviewerJwt":true/);

  const ok = await login(ESO_TOKEN);
  t.equal(ok.status, 200, JSON.stringify(ok.body));
  t.same(Object.keys(ok.body).sort(), ['accessToken', 'accessTokenMaxTTL', 'expiresIn', 'tokenType']);
  t.match(ok.body, { expiresIn: 600, accessTokenMaxTTL: 1200, tokenType: 'Bearer' });
  const review = kube.reviews.at(-1)!;
  t.equal(review.bearer, REVIEWER, 'the review authenticates with the reviewer JWT');
  t.same(review.body, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token: ESO_TOKEN, audiences: [AUD] } });
  t.equal((await read(ok.body.accessToken)).status, 200, 'the access token reads what the identity may read');
  t.match(JSON.stringify(await sql`select metadata from audit_log where event_type = 'login-identity-kubernetes-auth'`), /"namespace":"external-secrets"/);

  // Renew works as for every method.
  const renewed = await request(`${svc.url}/api/v1/auth/token/renew`, { method: 'POST', json: { accessToken: ok.body.accessToken } });
  t.equal(renewed.status, 200, JSON.stringify(renewed.body));
});

t.test('the bindings and the review: wrong namespace, name, audience, unauthenticated token, a user token', async (t) => {
  const { kube, login, attach } = await setUp(t);
  t.equal((await attach()).status, 200);
  kube.tokens.set('wrong-ns', { username: saUsername('default', 'external-secrets'), audiences: [AUD] });
  kube.tokens.set('wrong-name', { username: saUsername('external-secrets', 'intruder'), audiences: [AUD] });
  kube.tokens.set('wrong-aud', { username: saUsername('external-secrets', 'external-secrets'), audiences: ['https://elsewhere.test'] });
  kube.tokens.set('a-user', { username: 'jane@example.test', audiences: [AUD] });
  refused(t, await login('wrong-ns'), 401, /namespace not allowed/);
  refused(t, await login('wrong-name'), 401, /name not allowed/);
  refused(t, await login('wrong-aud'), 401, /not authenticated: .*audiences/);
  refused(t, await login('not-a-token-the-cluster-knows'), 401, /not authenticated/);
  refused(t, await login('a-user'), 401, /not a Kubernetes service account token/);
  // Globs: other-ns is allowed too, and the name by its glob.
  kube.tokens.set('other-ns', { username: saUsername('other-ns', 'external-operator'), audiences: [AUD] });
  t.equal((await login('other-ns')).status, 200, 'a namespace of the list, a name by its glob');
});

t.test('no audience configured: none is asked for, any audience passes', async (t) => {
  const { kube, login, attach } = await setUp(t);
  t.equal((await attach({ allowedAudience: '' })).status, 200);
  kube.tokens.set('other-aud', { username: saUsername('external-secrets', 'external-secrets'), audiences: ['https://elsewhere.test'] });
  t.equal((await login('other-aud')).status, 200);
  t.same(kube.reviews.at(-1)!.body.spec, { token: 'other-aud' }, 'spec.audiences left out');
});

t.test("without a reviewer JWT the caller's own token reviews itself", async (t) => {
  const { seeded, kube, call, login, attach } = await setUp(t);
  t.equal((await attach({ tokenReviewerJwt: undefined })).status, 200);
  refused(t, await login(ESO_TOKEN), 401, /refused the service account token as its own reviewer \(403\)/);
  kube.tokens.get(ESO_TOKEN)!.canReview = true;
  t.equal((await login(ESO_TOKEN)).status, 200);
  t.equal(kube.reviews.at(-1)!.bearer, ESO_TOKEN);
  refused(t, await login('unknown-token'), 401, /own reviewer \(401\)/);
  // PATCH sets a reviewer; null removes it again.
  kube.tokens.get(ESO_TOKEN)!.canReview = false;
  t.equal((await call('PATCH', CFG(seeded.identityId), { tokenReviewerJwt: REVIEWER })).status, 200);
  t.equal((await login(ESO_TOKEN)).status, 200, 'reviewed by the reviewer set by PATCH');
  t.equal((await call('PATCH', CFG(seeded.identityId), { tokenReviewerJwt: '' })).status, 200, "'' keeps it (Infisical)");
  t.equal((await login(ESO_TOKEN)).status, 200);
  t.equal((await call('PATCH', CFG(seeded.identityId), { tokenReviewerJwt: null })).status, 200);
  refused(t, await login(ESO_TOKEN), 401, /own reviewer/);
});

t.test('faults are 503 with Retry-After, never a verdict on the token', async (t) => {
  const { seeded, kube, call, login, attach } = await setUp(t);
  t.equal((await attach()).status, 200);
  const unavailable = (r: JsonResponse, why: RegExp) => {
    refused(t, r, 503, why);
    t.equal(r.headers.get('retry-after'), '5');
  };

  // The configured reviewer refused (401): a fault of the configuration, not of the caller's token.
  kube.tokens.delete(REVIEWER);
  unavailable(await login(ESO_TOKEN), /refused the token reviewer JWT \(401\)/);
  kube.tokens.set(REVIEWER, { username: saUsername('kube-system', 'token-reviewer'), audiences: [], canReview: false });
  unavailable(await login(ESO_TOKEN), /refused the token reviewer JWT \(403\)/);
  kube.tokens.get(REVIEWER)!.canReview = true;
  t.equal((await login(ESO_TOKEN)).status, 200, 'and fine again');

  kube.mode = 'error';
  unavailable(await login(ESO_TOKEN), /answered 500/);
  // Slow: no answer within the review deadline (2 s, from REQUEST_DEADLINE_MS).
  kube.mode = 'hang';
  unavailable(await login(ESO_TOKEN), /no answer within 2000 ms/);
  kube.mode = 'up';

  // A CA the server's certificate does not chain to; and the system CAs.
  t.equal((await call('PATCH', CFG(seeded.identityId), { caCert: kube.otherCa })).status, 200);
  unavailable(await login(ESO_TOKEN), /TLS verification failed/);
  t.equal((await call('PATCH', CFG(seeded.identityId), { caCert: '' })).status, 200);
  unavailable(await login(ESO_TOKEN), /TLS verification failed/);
  // By name: the certificate names localhost too; the name is resolved (and checked) at connect time.
  t.equal((await call('PATCH', CFG(seeded.identityId), { caCert: kube.ca, kubernetesHost: `localhost:${kube.port}` })).status, 200);
  t.equal((await call('GET', CFG(seeded.identityId))).body.identityKubernetesAuth.kubernetesHost, `https://localhost:${kube.port}`, 'no scheme: https');
  t.equal((await login(ESO_TOKEN)).status, 200);

  // Down: connection refused.
  await kube.stop();
  unavailable(await login(ESO_TOKEN), /connection refused/);
});

t.test('configuration refused by name: SSRF posture, unsupported Infisical features, bad input', async (t) => {
  const { seeded, kube, call, attach } = await setUp(t);
  for (const host of ['https://169.254.169.254', 'https://[fe80::1]:6443', 'metadata.google.internal', 'https://0.0.0.0:6443', 'http://127.0.0.1:6443', 'https://u:p@host', 'https://h/?q=1']) {
    const r = await attach({ kubernetesHost: host });
    t.equal(r.status, 422, `${host}: ${JSON.stringify(r.body)}`);
    t.match(r.body.message, /kubernetesHost/);
  }
  for (const [field, value] of [
    ['tokenReviewMode', 'gateway'],
    ['gatewayId', '3f1e9a77-0000-4000-8000-000000000001'],
    ['verifyTlsCertificate', false],
    ['accessTokenPeriod', 60],
    ['templateId', '3f1e9a77-0000-4000-8000-000000000001'],
    ['caCert', 'not a certificate'],
    ['unknownField', 1],
  ] as const) {
    const r = await attach({ [field]: value });
    t.equal(r.status, 422, `${field}: ${JSON.stringify(r.body)}`);
    t.match(r.body.message, field === 'unknownField' ? /unknownField/ : new RegExp(field));
  }
  t.equal((await attach({ kubernetesHost: undefined })).status, 422, 'kubernetesHost is required');
  t.equal((await attach({ accessTokenTTL: 100, accessTokenMaxTTL: 10 })).status, 400, 'TTL above max TTL');
  t.equal((await call('GET', CFG(seeded.identityId))).status, 404, 'nothing was attached');
  t.equal((await call('PATCH', CFG(seeded.identityId), { allowedNames: 'x' })).status, 404);
  t.equal((await call('POST', CFG('not-a-uuid'), { kubernetesHost: kube.url })).status, 404);
  t.equal((await attach({ kubernetesHost: `${kube.url}/` })).status, 200, 'a trailing slash is fine');
  t.equal((await call('PATCH', CFG(seeded.identityId), { kubernetesHost: 'https://169.254.169.254' })).status, 422, 'PATCH checks too');
});

t.test('removal and deletion: tokens die, logins are 404; only superadmins configure', async (t) => {
  const { svc, seeded, call, login, read, attach } = await setUp(t);
  t.equal((await attach()).status, 200);
  const machine = (await login(ESO_TOKEN)).body.accessToken as string;
  t.equal((await read(machine)).status, 200);
  t.equal((await call('POST', CFG(seeded.identityId), { kubernetesHost: 'https://x.test' }, machine)).status, 403, 'a machine identity configures nothing');

  const removed = await call('DELETE', CFG(seeded.identityId));
  t.equal(removed.status, 200, JSON.stringify(removed.body));
  t.equal(removed.body.identityKubernetesAuth.tokenReviewerJwt, '');
  t.equal((await read(machine)).status, 401, 'its tokens stop working at once');
  refused(t, await login(ESO_TOKEN), 404, /Kubernetes Auth method not found/);
  const sql = svc.services.store.sql;
  t.equal((await sql`select count(*)::int as n from crypto_keys where purpose = 'identity'`)[0]!.n, 0, 'its data key went with it');

  t.equal((await attach()).status, 200, 'attached again');
  const again = (await login(ESO_TOKEN)).body.accessToken as string;
  t.equal((await read(again)).status, 200);
  t.equal((await call('DELETE', `/api/v1/identities/${seeded.identityId}`)).status, 200);
  t.equal((await read(again)).status, 401, "the identity's deletion ends its tokens");
  refused(t, await login(ESO_TOKEN), 404, /not found/);
  t.equal((await sql`select count(*)::int as n from crypto_keys where purpose = 'identity'`)[0]!.n, 0, 'and the data key');
  refused(t, await login(ESO_TOKEN, 'not-a-uuid'), 404, /not found/);
});
