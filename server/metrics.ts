// Prometheus metrics (prom-client), served on their own listener (METRICS_PORT, bound to
// METRICS_HOST, 127.0.0.1 by default): see README "Metrics" for why a separate port
// rather than a token on the API port.
//
// Labels are bounded: route TEMPLATES as declared in server/routes (never a path with a
// project, folder or key name in it), a fixed set of methods, the status code, a fixed
// set of cache names, crypto operations and login outcomes. No label ever carries a
// secret name, a project name, an id or anything else a client chooses.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Crypto } from '../crypto/index.js';
import type { CacheBus, ReadThroughCache } from '../storage/cache.js';
import type { CommittedChange } from './domain/pipeline.js';
import type { DeliveryOutcome } from './domain/webhookWorker.js';
import type { RequestRecord } from './http/types.js';
import { SeriesHistogram, type HistogramSeries } from './seriesHistogram.js';

/**
 * Every series of this service starts with this. It was `vault_` until issue 33: that
 * collides with HashiCorp Vault's own metrics in clusters that run both (README, Metrics,
 * has the old → new table).
 */
export const PREFIX = 'vaultstandalone_';

/**
 * prom-client's default gauges that break the naming rules (`_total` is for counters;
 * `promtool check metrics` refuses them). Each is the sum over the `type` label of the
 * gauge of the same name without `_total`, which stays: `sum(nodejs_active_handles)`.
 */
export const DROPPED_DEFAULT_METRICS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** The service's version, from the package.json beside the sources (or the build). */
export function serviceVersion(): string {
  for (const rel of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'vault-standalone' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // Not this one.
    }
  }
  return 'unknown';
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PATCH', 'PUT', 'DELETE']);
/** The route label of a request no declared route matched (404s; the UI's files are `ui-static`, server/http/static.ts). */
export const UNMATCHED_ROUTE = 'unmatched';

/** Login routes: their answers are the login outcomes. */
const LOGIN_ROUTES: Record<string, string> = {
  'POST /api/v1/auth/universal-auth/login': 'machine',
  'POST /api/v3/auth/login': 'user',
  'POST /api/v1/auth/jwt-auth/login': 'jwt',
  'POST /api/v1/auth/oidc-auth/login': 'oidc',
  'POST /api/v1/auth/kubernetes-auth/login': 'kubernetes',
};

/** The login kind of a route (undefined: not a login route). */
export function loginKind(method: string, route: string | undefined): string | undefined {
  return route === undefined ? undefined : LOGIN_ROUTES[`${method} ${route}`];
}

/** 200 success, 401 refused credentials, 429 refused because locked out, other 4xx malformed, 5xx error. */
export function loginOutcome(status: number): string {
  if (status >= 200 && status < 300) return 'success';
  if (status === 401) return 'failure';
  if (status === 429) return 'locked_out';
  if (status >= 500) return 'error';
  return 'invalid';
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** One route, method and status: requests counted since the last scrape, and its latency series. */
interface RequestSeries {
  readonly labels: { route: string; method: string; status: string };
  pending: number;
  readonly duration: HistogramSeries;
  readonly login: { kind: string; outcome: string } | undefined;
}

export interface Observed {
  caches: Record<string, Pick<ReadThroughCache<unknown>, 'counts' | 'bytes' | 'maxBytes' | 'size'>>;
  /** Other bounded holdings reported with the caches' byte gauges (the verified-token map). */
  held?: Record<string, { readonly bytes: number; readonly maxBytes: number; readonly size: number }>;
  /** Each crypto worker's rendered-answer cache: bytes held, summed over the workers. */
  renderCacheBytes?: () => number;
  crypto: Pick<Crypto, 'poolStats'>;
  bus: Pick<CacheBus, 'kind' | 'live'>;
  /** postgres.js's configured pool size (it exposes no in-use or waiting counts). */
  dbPoolMax: number;
  /** Webhooks by delivery state (ok, retrying, dead, disabled), read from the database at scrape time. */
  webhookStates?: () => Promise<{ state: string; n: number }[]>;
  /** The embedded database's disk (absent on PostgreSQL): the last look, and the reserve. */
  disk?: { state(): { freeBytes: number } | undefined; readonly reserveBytes: number };
}

export function createMetrics() {
  const registry = new Registry();
  const registers = [registry];
  collectDefaultMetrics({ register: registry });
  for (const name of DROPPED_DEFAULT_METRICS) registry.removeSingleMetric(name);

  new Gauge({
    name: `${PREFIX}build_info`,
    help: 'Always 1; the labels say which build runs: version (package.json) and node (the runtime).',
    labelNames: ['version', 'node'] as const,
    registers,
  }).set({ version: serviceVersion(), node: process.version }, 1);

  // Counted per series here and handed to the counter at scrape time: prom-client's inc()
  // hashes its label object on every call, which the per-request path cannot afford.
  const requestSeries = new Map<string, Map<string, Map<number, RequestSeries>>>();
  new Counter({
    name: `${PREFIX}http_requests_total`,
    help: 'HTTP requests answered, by route template, method and status (499: the client went away first).',
    labelNames: ['route', 'method', 'status'] as const,
    registers,
    collect() {
      for (const byMethod of requestSeries.values()) {
        for (const byStatus of byMethod.values()) {
          for (const s of byStatus.values()) {
            if (s.pending > 0) this.inc(s.labels, s.pending);
            s.pending = 0;
          }
        }
      }
    },
  });
  const httpDuration = new SeriesHistogram({
    name: `${PREFIX}http_request_duration_seconds`,
    help: 'Time from a request arriving to its answer being written, by route template and method.',
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const logins = new Counter({
    name: `${PREFIX}logins_total`,
    help: 'Login attempts by kind (machine: Universal Auth, user: a person, jwt, oidc, kubernetes) and outcome (success, failure, locked_out, invalid, error).',
    labelNames: ['kind', 'outcome'] as const,
    registers,
  });
  const cryptoTasks = new SeriesHistogram({
    name: `${PREFIX}crypto_task_duration_seconds`,
    help: 'Crypto worker tasks by operation: time from submission to answer, queue wait included.',
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const cryptoSeries = new Map<string, HistogramSeries>();
  const coalesced = new Counter({
    name: `${PREFIX}secret_reads_coalesced_total`,
    help: 'Secret reads that shared a decryption task already under way for the same folder version.',
    registers,
  });
  const auditAppend = new Histogram({
    name: `${PREFIX}audit_append_duration_seconds`,
    help: 'Time to append one audit entry (inside the change transaction).',
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const invalidation = new Histogram({
    name: `${PREFIX}invalidation_publish_duration_seconds`,
    help: 'Time from publishing a cache invalidation after a commit to every replica having applied it (Redis: acknowledgements; in-process: immediate).',
    buckets: LATENCY_BUCKETS,
    registers,
  });

  /** The series of one route, method (one of METHODS, or OTHER) and status. */
  function requestSeriesOf(route: string, m: string, status: number): RequestSeries {
    const kind = route === UNMATCHED_ROUTE ? undefined : loginKind(m, route);
    return {
      labels: { route, method: m, status: String(status) },
      pending: 0,
      duration: httpDuration.series(`${m} ${route}`, { route, method: m }),
      login: kind === undefined ? undefined : { kind, outcome: loginOutcome(status) },
    };
  }

  let observed: Observed | undefined;
  const cacheLast = new Map<string, { hits: number; misses: number; bypassed: number }>();
  new Counter({
    name: `${PREFIX}cache_requests_total`,
    help: 'Cache lookups by cache and result (hit, miss: loaded from the database, bypass: Redis link down, caches off).',
    labelNames: ['cache', 'result'] as const,
    registers,
    collect() {
      if (!observed) return;
      for (const [name, cache] of Object.entries(observed.caches)) {
        const last = cacheLast.get(name) ?? { hits: 0, misses: 0, bypassed: 0 };
        const now = { ...cache.counts };
        this.inc({ cache: name, result: 'hit' }, now.hits - last.hits);
        this.inc({ cache: name, result: 'miss' }, now.misses - last.misses);
        this.inc({ cache: name, result: 'bypass' }, now.bypassed - last.bypassed);
        cacheLast.set(name, now);
      }
    },
  });
  new Gauge({
    name: `${PREFIX}cache_bytes`,
    help: "Estimated bytes each cache holds (keys and values); never above its bound (CACHE_MAX_BYTES's share; the crypto workers' 'rendered' cache: RENDER_CACHE_MAX_BYTES each).",
    labelNames: ['cache'] as const,
    registers,
    collect() {
      if (!observed) return;
      for (const [name, cache] of Object.entries({ ...observed.caches, ...observed.held })) this.set({ cache: name }, cache.bytes);
      if (observed.renderCacheBytes) this.set({ cache: 'rendered' }, observed.renderCacheBytes());
    },
  });
  new Gauge({
    name: `${PREFIX}cache_max_bytes`,
    help: 'The byte bound of each cache (estimated bytes).',
    labelNames: ['cache'] as const,
    registers,
    collect() {
      if (!observed) return;
      for (const [name, cache] of Object.entries({ ...observed.caches, ...observed.held })) this.set({ cache: name }, cache.maxBytes);
    },
  });
  new Gauge({
    name: `${PREFIX}cache_entries`,
    help: 'Entries each cache holds.',
    labelNames: ['cache'] as const,
    registers,
    collect() {
      if (!observed) return;
      for (const [name, cache] of Object.entries({ ...observed.caches, ...observed.held })) this.set({ cache: name }, cache.size);
    },
  });
  new Gauge({
    name: `${PREFIX}crypto_pool_queue_depth`,
    help: 'Crypto tasks waiting for a free worker.',
    registers,
    collect() {
      if (observed) this.set(observed.crypto.poolStats().queueSize);
    },
  });
  new Gauge({
    name: `${PREFIX}crypto_pool_threads`,
    help: 'Crypto worker threads running.',
    registers,
    collect() {
      if (observed) this.set(observed.crypto.poolStats().threads);
    },
  });
  let busyLast = 0;
  new Counter({
    name: `${PREFIX}crypto_pool_busy_seconds_total`,
    help: 'Worker time spent running crypto tasks. rate() over crypto_pool_threads is the utilization over that window.',
    registers,
    collect() {
      if (!observed) return;
      // piscina's figure is a mean times a count: never let its rounding step back.
      const now = observed.crypto.poolStats().busySeconds;
      if (now > busyLast) {
        this.inc(now - busyLast);
        busyLast = now;
      }
    },
  });
  new Gauge({
    name: `${PREFIX}redis_connected`,
    help: 'Whether this replica hears the other replicas through Redis (1) or not (0; caches are bypassed). Absent without REDIS_URL.',
    // A label, so that the series is absent (not 0) when there is no Redis at all.
    labelNames: ['bus'] as const,
    registers,
    collect() {
      if (observed?.bus.kind === 'redis') this.set({ bus: 'redis' }, observed.bus.live ? 1 : 0);
    },
  });
  new Gauge({
    name: `${PREFIX}db_pool_max_connections`,
    help: 'Configured size of the database connection pool (postgres.js exposes no in-use or waiting counts).',
    registers,
    collect() {
      if (observed) this.set(observed.dbPoolMax);
    },
  });

  const dbDuration = new SeriesHistogram({
    name: `${PREFIX}db_query_duration_seconds`,
    help: 'Database calls (one storage function: one or a few statements) by backend (postgres, embedded) and aggregate (secrets, audit, …), failed ones included.',
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const dbSeries = new Map<string, HistogramSeries>();
  const dbErrors = new Counter({
    name: `${PREFIX}db_query_errors_total`,
    help: 'Database calls that failed, by backend, aggregate and kind (unavailable: connection lost or refused; conflict; invalid-input; other).',
    labelNames: ['backend', 'store', 'kind'] as const,
    registers,
  });

  // Absent until known (registered on the first report: a gauge without labels would
  // otherwise read 0, "broken"): set at start when the trail is known broken, and by each
  // full verification.
  let auditChain: { ok: boolean; verifiedAt?: Date } | undefined;
  const auditChainOk = new Gauge({
    name: `${PREFIX}audit_chain_ok`,
    help: "The audit chain's state as last found: 1 intact, 0 broken (edited, deleted or rolled back entries). Absent until a verification ran or the trail was found broken at start.",
    registers: [],
    collect() {
      if (auditChain !== undefined) this.set(auditChain.ok ? 1 : 0);
    },
  });
  const auditVerifiedAt = new Gauge({
    name: `${PREFIX}audit_last_verification_timestamp_seconds`,
    help: 'When the last full verification of the audit chain ended (Unix time). Absent until one ran in this process.',
    registers: [],
    collect() {
      if (auditChain?.verifiedAt !== undefined) this.set(auditChain.verifiedAt.getTime() / 1000);
    },
  });
  new Gauge({
    name: `${PREFIX}data_dir_free_bytes`,
    help: 'Free bytes on the disk holding DATA_DIR (the embedded database), looked at every 5 s and before writes. Absent on PostgreSQL.',
    registers,
    collect() {
      const state = observed?.disk?.state();
      if (state) this.set(state.freeBytes);
    },
  });
  new Gauge({
    name: `${PREFIX}data_dir_reserve_bytes`,
    help: 'DISK_RESERVE_BYTES: below this many free bytes on DATA_DIR, writes are refused (503). Absent on PostgreSQL.',
    registers,
    collect() {
      if (observed?.disk) this.set(observed.disk.reserveBytes);
    },
  });

  let front: { readonly unsentBytes: number; readonly slowClientCloses: number; readonly unsentRefusals: number } | undefined;
  new Gauge({
    name: `${PREFIX}http_unsent_bytes`,
    help: 'Bytes of replies held for clients that have not read them yet (capped by MAX_UNSENT_BYTES).',
    registers,
    collect() {
      if (front) this.set(front.unsentBytes);
    },
  });
  const slowLast = { closes: 0, refusals: 0 };
  new Counter({
    name: `${PREFIX}http_slow_clients_total`,
    help: 'Large replies cut short by slow clients: closed (no progress for SLOW_CLIENT_TIMEOUT_MS) or refused (503: MAX_UNSENT_BYTES reached).',
    labelNames: ['outcome'] as const,
    registers,
    collect() {
      if (!front) return;
      this.inc({ outcome: 'closed' }, front.slowClientCloses - slowLast.closes);
      this.inc({ outcome: 'refused' }, front.unsentRefusals - slowLast.refusals);
      slowLast.closes = front.slowClientCloses;
      slowLast.refusals = front.unsentRefusals;
    },
  });

  const webhookDeliveries = new Counter({
    name: `${PREFIX}webhook_deliveries_total`,
    help: 'Webhook delivery attempts by outcome (success; retry: failed, tried again later; dead: failed past WEBHOOK_RETRY_PERIOD_SECONDS).',
    labelNames: ['outcome'] as const,
    registers,
  });
  const webhookDuration = new Histogram({
    name: `${PREFIX}webhook_delivery_duration_seconds`,
    help: 'Time of one webhook delivery attempt (connect, send, answer), whatever its outcome.',
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const WEBHOOK_STATES = ['ok', 'retrying', 'dead', 'disabled'];
  new Gauge({
    name: `${PREFIX}webhooks`,
    help: 'Webhooks by delivery state: ok, retrying (a delivery failed and waits for its next try), dead (parked until enabled again), disabled.',
    labelNames: ['state'] as const,
    registers,
    async collect() {
      if (!observed?.webhookStates) return;
      let timer: NodeJS.Timeout | undefined;
      try {
        // A database that does not answer must not hold the scrape: 1 s, then the last values.
        const states = await Promise.race([
          observed.webhookStates(),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error('no answer')), 1_000);
          }),
        ]);
        const counts = new Map(states.map((c) => [c.state, c.n]));
        for (const state of WEBHOOK_STATES) this.set({ state }, counts.get(state) ?? 0);
      } catch {
        // The database is down: the series keep their last values (the scrape still answers).
      } finally {
        clearTimeout(timer);
      }
    },
  });

  return {
    registry,
    /** A webhook delivery ended (skips, which send nothing, are not counted). */
    webhookDelivery(o: DeliveryOutcome): void {
      if (o.outcome === 'skipped') return;
      webhookDeliveries.inc({ outcome: o.outcome });
      if (o.seconds !== undefined) webhookDuration.observe(o.seconds);
    },
    /** The HTTP front's slow-client accounting, read at scrape time. */
    observeFront(h: NonNullable<typeof front>): void {
      front = h;
    },
    /** From the HTTP front, once per request. */
    request(r: RequestRecord): void {
      const route = r.route ?? UNMATCHED_ROUTE;
      // Keys from fixed sets only: route templates, METHODS, the statuses this service sends.
      const method = METHODS.has(r.method) ? r.method : 'OTHER';
      let byMethod = requestSeries.get(route);
      if (byMethod === undefined) requestSeries.set(route, (byMethod = new Map()));
      let byStatus = byMethod.get(method);
      if (byStatus === undefined) byMethod.set(method, (byStatus = new Map()));
      let s = byStatus.get(r.status);
      if (s === undefined) byStatus.set(r.status, (s = requestSeriesOf(route, method, r.status)));
      s.pending++;
      s.duration.observe(r.durationMs / 1000);
      if (s.login !== undefined) logins.inc(s.login);
    },
    cryptoTask(op: string, seconds: number): void {
      let s = cryptoSeries.get(op);
      if (s === undefined) cryptoSeries.set(op, (s = cryptoTasks.series(op, { op })));
      s.observe(seconds);
    },
    coalescedRead(): void {
      coalesced.inc();
    },
    committed(c: CommittedChange): void {
      for (const s of c.auditAppendSeconds) auditAppend.observe(s);
      for (const s of c.publishSeconds) invalidation.observe(s);
    },
    /** One database call (ServiceHooks.dbCall): `failure` set when it failed. */
    dbCall(backend: string, store: string, seconds: number, failure?: string): void {
      const key = `${backend} ${store}`;
      let s = dbSeries.get(key);
      if (s === undefined) dbSeries.set(key, (s = dbDuration.series(key, { backend, store })));
      s.observe(seconds);
      if (failure !== undefined) dbErrors.inc({ backend, store, kind: failure });
    },
    /**
     * The audit chain as last found: `ok` false when broken. `verifiedAt`: when a full
     * verification ended (omitted when the state comes from elsewhere, e.g. the start-up
     * check of a deleted trail). Any code that verifies the chain (the route, a background
     * verifier) calls this with its result.
     */
    auditChain(ok: boolean, verifiedAt?: Date): void {
      if (auditChain === undefined) registry.registerMetric(auditChainOk);
      const at = verifiedAt ?? auditChain?.verifiedAt;
      if (at !== undefined && auditChain?.verifiedAt === undefined) registry.registerMetric(auditVerifiedAt);
      auditChain = { ok, verifiedAt: at };
    },
    /** The parts of the running service read at scrape time. */
    observe(o: Observed): void {
      observed = o;
    },
  };
}
export type Metrics = ReturnType<typeof createMetrics>;

/** GET /metrics on its own listener; anything else is a 404. Resolves with the bound port. */
export async function serveMetrics(metrics: Metrics, port: number, host: string): Promise<{ port: number; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if ((req.method !== 'GET' && req.method !== 'HEAD') || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
      return;
    }
    metrics.registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'content-type': metrics.registry.contentType, 'cache-control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      () => res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics unavailable\n'),
    );
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
