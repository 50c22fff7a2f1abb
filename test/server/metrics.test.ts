// /metrics on its own listener: scraped before and after a run of logins, reads and
// writes, the series move; labels carry route templates and never a secret name, a
// project name or an id.
import t from 'tap';
import { loginOutcome } from '../../server/metrics.js';
import { request } from '../helpers/http.js';
import { BACKENDS, INVENTORY, login, seedHomelab, startTestService, testEnv } from '../helpers/service.js';

/** `name{labels} value` lines as a map from `name{labels}` to value. */
function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

const value = (m: Map<string, number>, series: string) => m.get(series) ?? 0;

for (const backend of BACKENDS) {
  t.test(`metrics move with traffic (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend, { METRICS_PORT: '0' }));
    t.type(svc.metricsPort, 'number');
    const metricsUrl = `http://127.0.0.1:${svc.metricsPort}/metrics`;
    const scrape = async () => {
      const res = await fetch(metricsUrl);
      t.equal(res.status, 200);
      t.match(res.headers.get('content-type'), /^text\/plain/);
      return res.text();
    };
    t.equal((await fetch(`http://127.0.0.1:${svc.metricsPort}/other`)).status, 404, 'only /metrics');
    t.equal((await fetch(`${svc.url}/metrics`)).status, 404, 'not on the API port');

    const seeded = await seedHomelab(svc.services);
    const before = parse(await scrape());

    const refused = await request(`${svc.url}/api/v1/auth/universal-auth/login`, {
      method: 'POST',
      json: { clientId: seeded.clientId, clientSecret: '0'.repeat(64) },
    });
    t.equal(refused.status, 401);
    const token = await login(svc.url, seeded);
    const q = 'workspaceSlug=homelab&environment=prod&secretPath=%2F';
    // Concurrent reads of one folder version: one decryption task shared.
    const reads = await Promise.all([1, 2, 3, 4].map(() => request(`${svc.url}/api/v3/secrets/raw?${q}`, { token })));
    t.ok(reads.every((r) => r.status === 200));
    t.equal((await request(`${svc.url}/api/v3/secrets/raw/GATEWAY_TOKEN?${q}`, { token })).status, 200);
    // Two reads of the same folder version at the same moment (in-process, so they cannot
    // be served one after the other): the second shares the first's decryption task.
    const actor = { kind: 'identity' as const, identityId: seeded.identityId };
    const query = { project: { slug: 'homelab' }, environment: 'prod', secretPath: '/' };
    const [x, y] = await Promise.all([svc.services.secrets.list(actor, query), svc.services.secrets.list(actor, query)]);
    t.equal(x.length, y.length);
    const created = await request(`${svc.url}/api/v3/secrets/raw/METRICS_KEY`, {
      method: 'POST',
      token,
      json: { workspaceId: seeded.projectId, environment: 'prod', secretPath: '/', secretValue: 'v' },
    });
    t.equal(created.status, 200);

    const text = await scrape();
    const after = parse(text);
    const moved = (series: string, by = 1) => t.ok(value(after, series) - value(before, series) >= by, `${series} moved`);
    moved('vault_http_requests_total{route="/api/v3/secrets/raw",method="GET",status="200"}', 4);
    moved('vault_http_requests_total{route="/api/v3/secrets/raw/:secretName",method="GET",status="200"}');
    moved('vault_http_requests_total{route="/api/v3/secrets/raw/:secretName",method="POST",status="200"}');
    moved('vault_http_request_duration_seconds_count{route="/api/v3/secrets/raw",method="GET"}', 4);
    moved('vault_logins_total{kind="machine",outcome="success"}');
    moved('vault_logins_total{kind="machine",outcome="failure"}');
    moved('vault_crypto_task_duration_seconds_count{op="open"}');
    moved('vault_crypto_task_duration_seconds_count{op="seal"}');
    moved('vault_cache_requests_total{cache="accessTokens",result="hit"}');
    moved('vault_cache_requests_total{cache="folders",result="miss"}');
    moved('vault_audit_append_duration_seconds_count');
    moved('vault_invalidation_publish_duration_seconds_count');
    t.ok(after.has('vault_crypto_pool_queue_depth'), 'crypto queue depth');
    t.equal(value(after, 'vault_crypto_pool_threads'), 1);
    t.ok(value(after, 'vault_db_pool_max_connections') >= 1, 'database pool size');
    t.ok(after.has('process_cpu_user_seconds_total'), 'process metrics');
    t.ok(after.has('nodejs_eventloop_lag_seconds'), 'event loop metrics');
    if (backend === 'postgres+redis') t.equal(value(after, 'vault_redis_connected{bus="redis"}'), 1, 'redis connected');
    else t.notOk(text.includes('vault_redis_connected{'), 'no redis series without REDIS_URL');
    moved('vault_secret_reads_coalesced_total');

    // No label carries a name or an id a client chose.
    for (const name of [...Object.keys(INVENTORY), 'METRICS_KEY', 'homelab', seeded.projectId, seeded.clientId, seeded.identityId]) {
      t.notOk(text.includes(name), `no ${name} in the scrape`);
    }
  });
}

t.test('METRICS_PORT unset: no metrics listener', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  t.equal(svc.metricsPort, undefined);
});

t.test('login outcomes by status', async (t) => {
  t.equal(loginOutcome(200), 'success');
  t.equal(loginOutcome(401), 'failure');
  t.equal(loginOutcome(429), 'locked_out');
  t.equal(loginOutcome(422), 'invalid');
  t.equal(loginOutcome(503), 'error');
});
