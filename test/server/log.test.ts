// The log as an operator's log store receives it: the real process, the seed's whole
// first-time setup over HTTP, reads, writes, searches and refused logins. Every line is
// JSON; every request has one line naming its route template and caller; start-up and
// shutdown are structured; and no line holds a secret value, a password, a client
// secret, a token, a key or a query string.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { parseConfig } from '../../server/config.js';
import { loginRefusal, requestLogLevel } from '../../server/app.js';
import { UI_STATIC_ROUTE } from '../../server/http/static.js';
import { formatPretty } from '../../server/log.js';
import { ADMIN } from '../helpers/admin.js';
import { freshDatabase, REDIS_URL } from '../helpers/db.js';
import { request } from '../helpers/http.js';
import { runMain } from '../helpers/process.js';
import { INVENTORY } from '../helpers/service.js';

type Line = Record<string, unknown> & { level: string; time: string; msg: string };

t.test('request log and structured events; no credential or value in any line', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-log-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const ENCRYPTION_KEY = randomBytes(16).toString('hex');
  const AUTH_SECRET = randomBytes(32).toString('base64');
  const SETUP_TOKEN = randomBytes(16).toString('hex');
  const main = runMain({
    NODE_ENV: 'production',
    ENCRYPTION_KEY,
    AUTH_SECRET,
    DATA_DIR: dataDir,
    DATABASE_URL: await freshDatabase(t),
    REDIS_URL,
    LOG_LEVEL: 'debug',
    SETUP_TOKEN,
  });
  t.teardown(() => main.stop('SIGKILL'));
  const url = await main.listening;
  const reqIds: string[] = [];
  const api = async (path: string, init: Parameters<typeof request>[1] = {}) => {
    const r = await request(`${url}${path}`, init);
    reqIds.push(r.headers.get('x-request-id')!);
    return r;
  };

  // Everything that must never reach a log line.
  const forbidden: Record<string, string> = { ENCRYPTION_KEY, AUTH_SECRET, SETUP_TOKEN, adminPassword: ADMIN.password };
  for (const [k, v] of Object.entries(INVENTORY)) forbidden[`value ${k}`] = v;

  // The seed's setup: superadmin, project, inventory, identity, client secret, membership.
  const signup = await api('/api/v1/admin/signup', { method: 'POST', json: { ...ADMIN, setupCode: SETUP_TOKEN } });
  t.equal(signup.status, 200);
  const token = signup.body.token as string;
  forbidden.sessionToken = token;
  forbidden.csrfToken = signup.body.csrfToken;
  const project = (await api('/api/v1/projects', { method: 'POST', token, json: { projectName: 'homelab' } })).body.project;
  const batch = await api('/api/v3/secrets/batch/raw', {
    method: 'POST',
    token,
    json: { projectSlug: 'homelab', environment: 'prod', secretPath: '/', secrets: Object.entries(INVENTORY).map(([secretKey, secretValue]) => ({ secretKey, secretValue })) },
  });
  t.equal(batch.status, 200);
  const identityId = (await api('/api/v1/identities', { method: 'POST', token, json: { name: 'homelab-eso' } })).body.identity.id as string;
  const clientId = (await api(`/api/v1/auth/universal-auth/identities/${identityId}`, { method: 'POST', token, json: {} })).body.identityUniversalAuth.clientId;
  const clientSecret = (await api(`/api/v1/auth/universal-auth/identities/${identityId}/client-secrets`, { method: 'POST', token, json: {} })).body.clientSecret as string;
  forbidden.clientSecret = clientSecret;
  t.equal((await api(`/api/v1/projects/${project.id}/memberships/identities/${identityId}`, { method: 'POST', token, json: { role: 'member' } })).status, 200);

  // Refused logins: the attempted password and secret are credentials too.
  const wrongPassword = 'wrong-password-' + randomBytes(8).toString('hex');
  const wrongSecret = randomBytes(32).toString('hex');
  forbidden.wrongPassword = wrongPassword;
  forbidden.wrongSecret = wrongSecret;
  t.equal((await api('/api/v3/auth/login', { method: 'POST', json: { email: ADMIN.email, password: wrongPassword } })).status, 401);
  t.equal((await api('/api/v1/auth/universal-auth/login', { method: 'POST', json: { clientId, clientSecret: wrongSecret } })).status, 401);
  const userLogin = await api('/api/v3/auth/login', { method: 'POST', json: { email: ADMIN.email, password: ADMIN.password } });
  t.equal(userLogin.status, 200);
  forbidden.secondSessionToken = userLogin.body.token;

  // The operator: login, reads (one with a value in its query string), revoke.
  const login = await api('/api/v1/auth/universal-auth/login', { method: 'POST', json: { clientId, clientSecret } });
  t.equal(login.status, 200);
  const access = login.body.accessToken as string;
  forbidden.accessToken = access;
  const list = await api(`/api/v3/secrets/raw?workspaceSlug=homelab&environment=prod&secretPath=%2F&note=${encodeURIComponent(INVENTORY.GATEWAY_TOKEN!)}`, { token: access });
  t.equal(list.status, 200);
  const one = await api('/api/v3/secrets/raw/GATEWAY_TOKEN?workspaceSlug=homelab&environment=prod', { token: access });
  t.equal(one.status, 200);
  const oneReqId = one.headers.get('x-request-id');

  // Writes by the operator and the admin, a new value each.
  const written = 'written-value-' + randomBytes(8).toString('hex');
  const patched = 'patched-value-' + randomBytes(8).toString('hex');
  forbidden.written = written;
  forbidden.patched = patched;
  t.equal((await api('/api/v3/secrets/raw/NEW_KEY', { method: 'POST', token: access, json: { workspaceId: project.id, environment: 'prod', secretPath: '/', secretValue: written } })).status, 200);
  t.equal((await api('/api/v3/secrets/raw/NEW_KEY', { method: 'PATCH', token, json: { workspaceId: project.id, environment: 'prod', secretPath: '/', secretValue: patched } })).status, 200);

  // Searches: the admin's secret list and the audit trail with filters.
  t.equal((await api(`/api/v4/secrets?projectId=${project.id}&environment=prod&secretPath=%2F`, { token })).status, 200);
  t.equal((await api(`/api/v1/organization/audit-logs?projectId=${project.id}&eventType=update-secret&limit=50`, { token })).status, 200);
  t.equal((await api('/api/v1/auth/token/revoke', { method: 'POST', json: { accessToken: access } })).status, 200);
  // A refused token in a header, and an unknown path naming a key.
  t.equal((await api('/api/v3/secrets/raw', { token: access })).status, 401);
  t.equal((await api(`/api/nothing/${encodeURIComponent(INVENTORY.LLM_API_KEY!)}`)).status, 404);

  const { code, stdout, stderr } = await main.stop('SIGTERM');
  t.equal(code, 0, 'clean shutdown');
  const raw = stdout.split('\n').filter((l) => l !== '');
  const lines = raw.map((l) => JSON.parse(l) as Line);
  t.ok(lines.every((l) => typeof l.time === 'string' && typeof l.level === 'string' && typeof l.msg === 'string'), 'every stdout line is a JSON log record');

  // Start-up, keys, migrations, audit head, shutdown: structured events.
  const events = new Set(lines.map((l) => l.event).filter(Boolean));
  for (const e of ['starting', 'migrations', 'keys', 'listening', 'audit', 'shutdown', 'audit-head', 'stopped']) t.ok(events.has(e), `event ${e} logged`);
  const audited = lines.filter((l) => l.event === 'audit').flatMap((l) => l.auditEvents as string[]);
  for (const e of ['create-project', 'create-secret', 'update-secret', 'create-identity']) t.ok(audited.includes(e), `audit event ${e} logged`);
  const listening = lines.find((l) => l.event === 'listening')!;
  t.equal(listening.database, 'postgres');
  t.equal(listening.cache, 'redis');

  // One line per request, with the route template and the caller.
  const requests = lines.filter((l) => l.msg === 'request');
  t.ok(reqIds.length >= 20);
  for (const id of reqIds) t.equal(requests.filter((l) => l.reqId === id).length, 1, `one line for ${id}`);
  const read = requests.find((l) => l.reqId === oneReqId);
  t.ok(read, 'the line carries the X-Request-Id the client saw');
  t.match(read, {
    level: 'info',
    method: 'GET',
    route: '/api/v3/secrets/raw/:secretName',
    status: 200,
    actorKind: 'identity',
    actorId: identityId,
    client: String,
  });
  t.type(read!.durationMs, 'number');
  t.ok(requests.some((l) => l.route === '/api/v1/auth/universal-auth/login' && l.status === 401 && l.level === 'warn'), 'refused login logged by status, at warn');
  t.ok(requests.every((l) => l.level === (l.status === 401 || l.status === 403 || l.status === 429 ? 'warn' : 'info')), 'each request line at its status level');

  // Refused logins: one warn line each, naming the kind and outcome, the request and the
  // client, never what was sent.
  const refusedLogins = lines.filter((l) => l.event === 'login-refused');
  t.same(
    refusedLogins.map((l) => [l.level, l.kind, l.outcome]),
    [
      ['warn', 'user', 'failure'],
      ['warn', 'machine', 'failure'],
    ],
  );
  for (const l of refusedLogins) {
    t.ok(reqIds.includes(l.reqId as string), 'the refused login names its request');
    t.type(l.client, 'string');
  }

  // Audit lines: who did it and in which request; never one without an entry.
  const auditLines = lines.filter((l) => l.event === 'audit');
  t.ok(auditLines.every((l) => Array.isArray(l.auditEvents) && (l.auditEvents as string[]).length > 0), 'no empty audit line (a refused login writes none)');
  const secretCreated = auditLines.find((l) => (l.auditEvents as string[]).includes('create-secret') && l.actorKind === 'identity');
  t.ok(secretCreated, "the operator's write has its audit line");
  t.equal(secretCreated?.actorId, identityId, 'the audit line names the actor');
  t.ok(reqIds.includes(secretCreated?.reqId as string), 'the audit line names the request');
  const projectCreated = auditLines.find((l) => (l.auditEvents as string[]).includes('create-project'));
  t.equal(projectCreated?.actorKind, 'user');
  t.ok(reqIds.includes(projectCreated?.reqId as string), "the admin's write names its request");
  t.ok(requests.some((l) => l.route === null && l.status === 404), 'an unmatched path has no route, not its raw path');
  t.notOk(raw.some((l) => l.includes('GATEWAY_TOKEN') && l.includes('"msg":"request"')), 'no key name from a path in a request line');
  t.notOk(raw.some((l) => l.includes('secretPath=') || l.includes('workspaceSlug=')), 'no query string');

  // The search itself finds what is there (so its silence below means something).
  const everything = `${stdout}\n${stderr}`;
  t.ok(everything.includes(identityId), 'control: an id that is logged is found');
  for (const [what, value] of Object.entries(forbidden)) {
    t.notOk(everything.includes(value), `no ${what} in the log`);
  }
  t.notOk(everything.toLowerCase().includes('bearer '), 'no authorization header');
});

t.test('LOG_FORMAT=pretty: one readable line per record', async (t) => {
  const line = formatPretty(
    JSON.stringify({ level: 'info', time: '2026-11-26T00:00:01.234Z', pid: 1, reqId: 'req-x', route: '/api/status', status: 200, msg: 'request' }),
  );
  t.equal(line, '2026-11-26T00:00:01.234Z INFO  request reqId=req-x route=/api/status status=200\n', 'date, time and zone');
  t.equal(formatPretty('not json'), 'not json\n');
});

t.test('request line levels by status; refused logins', async (t) => {
  const level = (status: number, route?: string) => requestLogLevel({ status, route });
  t.equal(level(200, '/api/status'), 'info');
  t.equal(level(404), 'info', 'an unmatched path');
  t.equal(level(422, '/api/v3/secrets/raw'), 'info', 'bad input is the client’s');
  for (const s of [401, 403, 429]) t.equal(level(s, '/api/v3/secrets/raw'), 'warn', `${s}: refused`);
  for (const s of [500, 503]) t.equal(level(s, '/api/v3/secrets/raw'), 'error', `${s}: the service failed`);
  t.equal(level(200, UI_STATIC_ROUTE), 'debug', 'a UI file');
  t.equal(level(304, UI_STATIC_ROUTE), 'debug');
  t.equal(level(503, UI_STATIC_ROUTE), 'error');
  t.same(loginRefusal({ method: 'POST', route: '/api/v3/auth/login', status: 401 }), { kind: 'user', outcome: 'failure' });
  t.same(loginRefusal({ method: 'POST', route: '/api/v1/auth/kubernetes-auth/login', status: 429 }), { kind: 'kubernetes', outcome: 'locked_out' });
  t.equal(loginRefusal({ method: 'POST', route: '/api/v3/auth/login', status: 200 }), undefined);
  t.equal(loginRefusal({ method: 'GET', route: '/api/v3/secrets/raw', status: 401 }), undefined, 'not a login');
});

t.test('LOG_FORMAT, METRICS_PORT and METRICS_HOST settings', async (t) => {
  const base = { ENCRYPTION_KEY: randomBytes(16).toString('hex'), AUTH_SECRET: randomBytes(32).toString('base64') };
  const c = parseConfig(base);
  t.equal(c.logFormat, 'json');
  t.equal(c.metricsPort, undefined, 'no metrics listener by default');
  t.equal(c.metricsHost, '127.0.0.1', 'loopback by default');
  const set = parseConfig({ ...base, LOG_FORMAT: 'pretty', METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0' });
  t.same([set.logFormat, set.metricsPort, set.metricsHost], ['pretty', 9464, '0.0.0.0']);
  t.throws(() => parseConfig({ ...base, LOG_FORMAT: 'xml' }), /invalid LOG_FORMAT/);
  t.throws(() => parseConfig({ ...base, METRICS_PORT: '70000' }), /invalid METRICS_PORT/);
});
