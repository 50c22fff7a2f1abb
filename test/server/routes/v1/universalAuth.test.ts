// Universal Auth settings that Infisical accepts, applied: PATCH of the configuration,
// client-secret trusted IPs checked at login, access-token trusted IPs on every request,
// the access-token use limit counted atomically, and TRUSTED_PROXIES deciding when
// X-Forwarded-For names the client.
import t from 'tap';
import { signupAdmin } from '../../../helpers/admin.js';
import { ESO_LIST_QUERY, request, type JsonResponse } from '../../../helpers/http.js';
import { seedHomelab, startTestService, testEnv, type Seeded, type TestService } from '../../../helpers/service.js';

const UA = (id: string) => `/api/v1/auth/universal-auth/identities/${id}`;
const LOGIN = '/api/v1/auth/universal-auth/login';
const IP_REFUSED = 'You are not allowed to access this resource from the current IP address';
const USES_EXHAUSTED = 'Unable to renew because access token number of uses limit reached';
const ANY = [
  { ipAddress: '0.0.0.0', type: 'ipv4', prefix: 0 },
  { ipAddress: '::', type: 'ipv6', prefix: 0 },
];

async function setUp(t: any, extra: Record<string, string> = {}) {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis', extra));
  const admin = (await signupAdmin(svc.url)).token;
  const seeded = await seedHomelab(svc.services);
  const call = (method: string, path: string, json?: unknown, headers?: Record<string, string>) =>
    request(`${svc.url}${path}`, { method, token: admin, json, headers });
  const patch = (json: unknown) => call('PATCH', UA(seeded.identityId), json);
  const login = (headers: Record<string, string> = {}, who: Seeded = seeded) =>
    request(`${svc.url}${LOGIN}`, { method: 'POST', json: { clientId: who.clientId, clientSecret: who.clientSecret }, headers });
  const read = (token: string, headers: Record<string, string> = {}) => request(`${svc.url}/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { token, headers });
  return { svc, seeded, call, patch, login, read };
}

const failures = async (svc: TestService, identityId: string) =>
  (await svc.services.store.sql<{ failedLogins: number }[]>`select coalesce(sum(failed_logins), 0)::int as failed_logins from identity_login_failures where identity_id = ${identityId}`)[0]!.failedLogins;

function refused(t: any, r: JsonResponse, status: number, message: string | RegExp) {
  t.equal(r.status, status, JSON.stringify(r.body));
  t.match(r.body.message, message);
}

t.test('PATCH changes the given settings, keeps the others, and answers in Infisical shape', async (t) => {
  const { svc, seeded, call, patch } = await setUp(t);
  const before = (await call('GET', UA(seeded.identityId))).body.identityUniversalAuth;
  t.match(before, { accessTokenNumUsesLimit: 0, accessTokenPeriod: 0, clientSecretTrustedIps: ANY, accessTokenTrustedIps: ANY, accessTokenTTL: 2592000 });

  const changed = await patch({
    clientSecretTrustedIps: [{ ipAddress: ' 10.0.0.0/8 ' }, { ipAddress: '192.168.1.7' }, { ipAddress: 'FD00::/8' }],
    accessTokenNumUsesLimit: 5,
    accessTokenTTL: 600,
  });
  t.equal(changed.status, 200, JSON.stringify(changed.body));
  const ua = changed.body.identityUniversalAuth;
  t.same(ua.clientSecretTrustedIps, [
    { ipAddress: '10.0.0.0', type: 'ipv4', prefix: 8 },
    { ipAddress: '192.168.1.7', type: 'ipv4' },
    { ipAddress: 'fd00::', type: 'ipv6', prefix: 8 },
  ]);
  t.match(ua, { accessTokenNumUsesLimit: 5, accessTokenTTL: 600, accessTokenMaxTTL: 2592000, accessTokenTrustedIps: ANY, clientId: before.clientId });
  t.same((await call('GET', UA(seeded.identityId))).body.identityUniversalAuth, ua, 'GET answers what PATCH stored');
  const [event] = await svc.services.store.sql<{ metadata: Record<string, unknown> }[]>`select metadata from audit_log
    where event_type = 'update-identity-universal-auth' order by id desc limit 1`;
  t.match(event!.metadata, { identityId: seeded.identityId, clientSecretTrustedIps: '10.0.0.0/8, 192.168.1.7, fd00::/8', accessTokenNumUsesLimit: 5 }, 'audited');
  t.equal((await patch({ accessTokenPeriod: 0 })).status, 200, 'accessTokenPeriod 0 (not periodic) is what the service does');

  // Refused, each naming the field; nothing changed.
  const cases: Array<[unknown, number, RegExp]> = [
    [{ clientSecretTrustedIps: [{ ipAddress: '10.0.0.0/33' }] }, 422, /^clientSecretTrustedIps\.0\.ipAddress: The IP is not a valid IPv4, IPv6, or CIDR block$/],
    [{ accessTokenTrustedIps: [{ ipAddress: 'example.org' }] }, 422, /^accessTokenTrustedIps\.0\.ipAddress: /],
    [{ accessTokenTrustedIps: [] }, 422, /^accessTokenTrustedIps: /],
    [{ accessTokenTrustedIps: ['10.0.0.1'] }, 422, /^accessTokenTrustedIps\.0: /],
    [{ accessTokenTrustedIps: [{ ipAddress: '10.0.0.1', prefix: 8 }] }, 422, /prefix/],
    [{ accessTokenNumUsesLimit: -1 }, 422, /^accessTokenNumUsesLimit: /],
    [{ accessTokenPeriod: 3600 }, 422, /accessTokenPeriod/],
    [{ lockoutEnabled: false }, 422, /lockoutEnabled/],
    [{ accessTokenTTL: 600, surprise: 1 }, 422, /surprise/],
    [{ accessTokenTTL: 7200, accessTokenMaxTTL: 3600 }, 400, /^Access token TTL cannot be greater than max TTL$/],
    [{ accessTokenTTL: 2592001 }, 400, /^Access token TTL cannot be greater than max TTL$/],
  ];
  for (const [body, status, message] of cases) refused(t, await patch(body), status, message);
  t.same((await call('GET', UA(seeded.identityId))).body.identityUniversalAuth.clientSecretTrustedIps, ua.clientSecretTrustedIps, 'unchanged');
  refused(t, await call('PATCH', UA('00000000-0000-4000-8000-000000000000'), { accessTokenTTL: 60 }), 404, /Identity/);
  const bare = (await call('POST', '/api/v1/identities', { name: 'bare' })).body.identity.id;
  refused(t, await call('PATCH', UA(bare), { accessTokenTTL: 60 }), 404, /Universal Auth is not configured/);

  // Attach takes the same fields, and applies them.
  const attached = await call('POST', UA(bare), { accessTokenNumUsesLimit: 2, accessTokenTrustedIps: [{ ipAddress: '127.0.0.1' }] });
  t.equal(attached.status, 200, JSON.stringify(attached.body));
  t.match(attached.body.identityUniversalAuth, { accessTokenNumUsesLimit: 2, accessTokenTrustedIps: [{ ipAddress: '127.0.0.1', type: 'ipv4' }], clientSecretTrustedIps: ANY });
  const other = (await call('POST', '/api/v1/identities', { name: 'other' })).body.identity.id;
  refused(t, await call('POST', UA(other), { lockoutThreshold: 5 }), 422, /lockoutThreshold/);
});

t.test('client-secret trusted IPs are checked at login; refusals do not count as failures', async (t) => {
  const { svc, seeded, patch, login } = await setUp(t);
  t.equal((await patch({ clientSecretTrustedIps: [{ ipAddress: '10.0.0.0/8' }] })).status, 200);
  const outside = await login();
  refused(t, outside, 403, IP_REFUSED);
  t.equal(outside.body.error, 'PermissionDenied');
  refused(t, await login({ 'x-forwarded-for': '10.1.2.3' }), 403, IP_REFUSED);
  t.equal(await failures(svc, seeded.identityId), 0, 'X-Forwarded-For is not believed without TRUSTED_PROXIES; nothing counted');
  for (let i = 0; i < 5; i++) refused(t, await login(), 403, IP_REFUSED);
  t.equal(await failures(svc, seeded.identityId), 0, 'refused addresses never lock the client out');

  t.equal((await patch({ clientSecretTrustedIps: [{ ipAddress: '10.0.0.0/8' }, { ipAddress: '127.0.0.1' }] })).status, 200);
  t.equal((await login()).status, 200, 'allowed once the address is in the list');
  t.equal((await patch({ clientSecretTrustedIps: [{ ipAddress: '::ffff:127.0.0.0/104' }] })).status, 200);
  t.equal((await login()).status, 200, 'an IPv4-mapped range matches the IPv4 address');
});

// LOG_LEVEL=warn: no request log, so a read asks its socket's address only when a list
// needs it (HttpServerOptions.readAddressOnArrival); info: asked when each request arrives.
for (const logLevel of ['info', 'warn']) {
  t.test(`access-token trusted IPs apply to every request, at once (LOG_LEVEL=${logLevel})`, async (t) => {
    const { seeded, patch, login, read } = await setUp(t, { LOG_LEVEL: logLevel });
    const token = (await login()).body.accessToken as string;
    t.equal((await read(token)).status, 200);
    t.equal((await patch({ accessTokenTrustedIps: [{ ipAddress: '203.0.113.0/24' }] })).status, 200);
    const refusedRead = await read(token);
    refused(t, refusedRead, 403, IP_REFUSED);
    refused(t, await read(token, { 'x-forwarded-for': '203.0.113.5' }), 403, IP_REFUSED);
    t.equal((await login()).status, 200, 'logins follow the other list');
    t.equal((await patch({ accessTokenTrustedIps: [{ ipAddress: '203.0.113.0/24' }, { ipAddress: '127.0.0.1/32' }] })).status, 200);
    t.equal((await read(token)).status, 200, 'allowed again');
    t.ok(seeded);
  });
}

t.test('renew and revoke apply the access-token trusted IPs as a use does', async (t) => {
  const { svc, patch, login, read } = await setUp(t, { TRUSTED_PROXIES: '127.0.0.1/32, ::1' });
  t.equal((await patch({ accessTokenTrustedIps: [{ ipAddress: '10.0.0.0/8' }] })).status, 200);
  const inside = { 'x-forwarded-for': '10.1.2.3' };
  const outside = { 'x-forwarded-for': '203.0.113.9' };
  const token = (await login(outside)).body.accessToken as string;
  const renew = (headers: Record<string, string>) => request(`${svc.url}/api/v1/auth/token/renew`, { method: 'POST', json: { accessToken: token }, headers });
  const revoke = (headers: Record<string, string>) => request(`${svc.url}/api/v1/auth/token/revoke`, { method: 'POST', json: { accessToken: token }, headers });
  t.equal((await read(token, inside)).status, 200, 'used from a trusted address');
  refused(t, await read(token, outside), 403, IP_REFUSED);
  refused(t, await renew(outside), 403, IP_REFUSED);
  refused(t, await revoke(outside), 403, IP_REFUSED);
  t.equal((await read(token, inside)).status, 200, 'the refused revoke revoked nothing');
  t.equal((await renew(inside)).status, 200, 'renewed from a trusted address');
  t.equal((await revoke(inside)).status, 200, 'revoked from a trusted address');
  t.equal((await read(token, inside)).status, 401, 'revoked');
  t.equal((await revoke(inside)).status, 200, 'a retried revoke is answered as the first');
  refused(t, await renew(inside), 401, /revoked or expired/);
});

t.test('accessTokenNumUsesLimit: each token serves exactly that many requests, even in parallel', async (t) => {
  const { svc, patch, login, read } = await setUp(t);
  const unlimited = (await login()).body.accessToken as string;
  t.equal((await patch({ accessTokenNumUsesLimit: 3 })).status, 200);
  const limited = (await login()).body.accessToken as string;
  const burst = await Promise.all(Array.from({ length: 10 }, () => read(limited)));
  t.same(burst.map((r) => r.status).sort(), [200, 200, 200, 401, 401, 401, 401, 401, 401, 401], 'exactly 3 of 10 parallel requests served');
  for (const r of burst.filter((x) => x.status === 401)) {
    t.equal(r.body.message, USES_EXHAUSTED);
    t.equal(r.body.error, 'UnauthorizedError');
  }
  refused(t, await read(limited), 401, USES_EXHAUSTED);
  refused(t, await request(`${svc.url}/api/v1/auth/token/renew`, { method: 'POST', json: { accessToken: limited } }), 401, USES_EXHAUSTED);
  for (let i = 0; i < 5; i++) t.equal((await read(unlimited)).status, 200, 'a token issued before the limit keeps its own (none)');

  const one = (await login()).body.accessToken as string;
  t.equal((await read(one)).status, 200);
  t.equal((await read(one)).status, 200);
  t.equal((await read(one)).status, 200);
  t.equal((await read(one)).status, 401, 'the fourth use of a fresh token is refused');
  t.equal((await patch({ accessTokenNumUsesLimit: 0 })).status, 200);
  const again = (await login()).body.accessToken as string;
  for (let i = 0; i < 5; i++) t.equal((await read(again)).status, 200, '0 = unlimited');
});

for (const logLevel of ['info', 'warn']) {
  t.test(`TRUSTED_PROXIES: X-Forwarded-For names the client only when a trusted proxy sent it (LOG_LEVEL=${logLevel})`, async (t) => {
    const { svc, seeded, patch, login, read } = await setUp(t, { TRUSTED_PROXIES: '127.0.0.1/32, ::1', LOG_LEVEL: logLevel });
    t.equal((await patch({ clientSecretTrustedIps: [{ ipAddress: '10.0.0.0/8' }] })).status, 200);
    refused(t, await login(), 403, IP_REFUSED);
    const ok = await login({ 'x-forwarded-for': '10.1.2.3' });
    t.equal(ok.status, 200, 'the proxy says the client is 10.1.2.3');
    const [entry] = await svc.services.store.sql<{ ip: string }[]>`select ip from audit_log where event_type = 'login-identity-universal-auth' order by id desc limit 1`;
    t.equal(entry!.ip, '10.1.2.3', 'the audit trail records the client, not the proxy');
    refused(t, await login({ 'x-forwarded-for': '10.1.2.3, 203.0.113.9' }), 403, IP_REFUSED);
    t.equal((await login({ 'x-forwarded-for': '203.0.113.9, 10.1.2.3' })).status, 200, 'the rightmost untrusted entry counts; what the client prepended does not');

    t.equal((await patch({ accessTokenTrustedIps: [{ ipAddress: '10.0.0.0/8' }] })).status, 200);
    const token = ok.body.accessToken as string;
    t.equal((await read(token, { 'x-forwarded-for': '10.9.9.9' })).status, 200);
    refused(t, await read(token), 403, IP_REFUSED);
    t.ok(seeded);
  });
}
