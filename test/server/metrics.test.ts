// /metrics on its own listener: scraped before and after a run of logins, reads and
// writes, the series move; labels carry route templates and never a secret name, a
// project name or an id; `promtool check metrics` finds no problem in the scrape.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import t from 'tap';
import { SYSTEM } from '../../server/domain/access.js';
import { createMetrics, loginOutcome, PREFIX, serviceVersion } from '../../server/metrics.js';
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

/** Prometheus' own linter (Debian's `prometheus` package; .ci/run installs it). */
const PROMTOOL = '/usr/bin/promtool';

/** `promtool check metrics` on a scrape: its exit code and what it printed (problems, one a line). */
function promtool(text: string): { code: number | null; out: string } {
  const r = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return { code: r.status, out: `${r.stdout}${r.stderr}`.trim() };
}

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
    moved('vaultstandalone_http_requests_total{route="/api/v3/secrets/raw",method="GET",status="200"}', 4);
    moved('vaultstandalone_http_requests_total{route="/api/v3/secrets/raw/:secretName",method="GET",status="200"}');
    moved('vaultstandalone_http_requests_total{route="/api/v3/secrets/raw/:secretName",method="POST",status="200"}');
    moved('vaultstandalone_http_request_duration_seconds_count{route="/api/v3/secrets/raw",method="GET"}', 4);
    moved('vaultstandalone_logins_total{kind="machine",outcome="success"}');
    moved('vaultstandalone_logins_total{kind="machine",outcome="failure"}');
    moved('vaultstandalone_crypto_task_duration_seconds_count{op="open"}');
    moved('vaultstandalone_crypto_task_duration_seconds_count{op="seal"}');
    moved('vaultstandalone_cache_requests_total{cache="accessTokens",result="hit"}');
    moved('vaultstandalone_cache_requests_total{cache="folders",result="miss"}');
    moved('vaultstandalone_audit_append_duration_seconds_count');
    moved('vaultstandalone_invalidation_publish_duration_seconds_count');
    t.ok(after.has('vaultstandalone_crypto_pool_queue_depth'), 'crypto queue depth');
    t.equal(value(after, 'vaultstandalone_crypto_pool_threads'), 1);
    t.ok(value(after, 'vaultstandalone_db_pool_max_connections') >= 1, 'database pool size');
    t.ok(after.has('process_cpu_user_seconds_total'), 'process metrics');
    t.ok(after.has('nodejs_eventloop_lag_seconds'), 'event loop metrics');
    if (backend === 'postgres+redis') t.equal(value(after, 'vaultstandalone_redis_connected{bus="redis"}'), 1, 'redis connected');
    else t.notOk(text.includes('vaultstandalone_redis_connected{'), 'no redis series without REDIS_URL');
    moved('vaultstandalone_secret_reads_coalesced_total');
    t.equal(value(after, `vaultstandalone_build_info{version="${serviceVersion()}",node="${process.version}"}`), 1, 'build_info');
    t.not(serviceVersion(), 'unknown', 'the version is read from package.json');
    const dbBackend = backend === 'embedded' ? 'embedded' : 'postgres';
    moved(`vaultstandalone_db_query_duration_seconds_count{backend="${dbBackend}",store="secrets"}`);
    t.ok(value(after, 'vaultstandalone_crypto_pool_busy_seconds_total') > value(before, 'vaultstandalone_crypto_pool_busy_seconds_total'), 'crypto busy seconds grow with work');
    for (const gone of ['vault_http_requests_total', 'nodejs_active_handles_total', 'crypto_pool_utilization_ratio']) {
      t.notOk(text.includes(gone), `no ${gone}`);
    }
    t.ok(after.has('nodejs_active_handles{type="Socket"}') || [...after.keys()].some((k) => k.startsWith('nodejs_active_handles{')), 'active handles by type stay');

    // The audit chain: absent until verified, then intact with the time it was checked.
    t.notOk(text.includes('vaultstandalone_audit_chain_ok '), 'no audit chain state before a verification');
    const verified = await svc.services.audit.verify(SYSTEM);
    t.ok(verified.ok);
    const audited = parse(await scrape());
    t.equal(value(audited, 'vaultstandalone_audit_chain_ok'), 1, 'audit chain intact');
    const at = value(audited, 'vaultstandalone_audit_last_verification_timestamp_seconds');
    t.ok(at > 1.7e9 && at <= Date.now() / 1000, 'last verification time in Unix seconds');

    // Prometheus' linter: the whole scrape follows the naming and format rules.
    if (existsSync(PROMTOOL)) {
      const lint = promtool(text);
      t.equal(lint.out, '', 'promtool reports no problem');
      t.equal(lint.code, 0, 'promtool check metrics passes');
    } else {
      t.fail(`${PROMTOOL} missing: apt-get install prometheus (.ci/run does)`);
    }

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

t.test('promtool refuses what it should (the check can fail)', { skip: !existsSync(PROMTOOL) && 'no promtool' }, async (t) => {
  const bad = promtool('# HELP x_active_total a gauge\n# TYPE x_active_total gauge\nx_active_total 1\n');
  t.not(bad.code, 0);
  t.match(bad.out, /non-counter metrics should not have "_total" suffix/);
});

t.test('database errors by kind; audit chain broken; busy seconds never step back', async (t) => {
  const m = createMetrics();
  m.dbCall('postgres', 'secrets', 0.002);
  m.dbCall('postgres', 'secrets', 0.004, 'unavailable');
  m.auditChain(false);
  const text = await m.registry.metrics();
  const after = parse(text);
  t.equal(value(after, `${PREFIX}db_query_duration_seconds_count{backend="postgres",store="secrets"}`), 2);
  t.equal(value(after, `${PREFIX}db_query_errors_total{backend="postgres",store="secrets",kind="unavailable"}`), 1);
  t.equal(value(after, `${PREFIX}audit_chain_ok`), 0, 'broken');
  t.notOk(text.includes(`${PREFIX}audit_last_verification_timestamp_seconds `), 'no verification time without a verification');
  let busy = 2;
  m.observe({ caches: {}, crypto: { poolStats: () => ({ queueSize: 0, threads: 1, busySeconds: busy, renderCacheBytes: 0 }) }, bus: { kind: 'memory', live: true }, dbPoolMax: 1 });
  t.equal(value(parse(await m.registry.metrics()), `${PREFIX}crypto_pool_busy_seconds_total`), 2);
  busy = 1.999;
  t.equal(value(parse(await m.registry.metrics()), `${PREFIX}crypto_pool_busy_seconds_total`), 2, 'a rounding step back is ignored');
});

t.test('login outcomes by status', async (t) => {
  t.equal(loginOutcome(200), 'success');
  t.equal(loginOutcome(401), 'failure');
  t.equal(loginOutcome(429), 'locked_out');
  t.equal(loginOutcome(422), 'invalid');
  t.equal(loginOutcome(503), 'error');
});
