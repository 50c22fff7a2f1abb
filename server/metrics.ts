// Prometheus metrics (prom-client), served on their own listener (METRICS_PORT, bound to
// METRICS_HOST, 127.0.0.1 by default): see README "Metrics" for why a separate port
// rather than a token on the API port.
//
// Labels are bounded: route TEMPLATES as declared in server/routes (never a path with a
// project, folder or key name in it), a fixed set of methods, the status code, a fixed
// set of cache names, crypto operations and login outcomes. No label ever carries a
// secret name, a project name, an id or anything else a client chooses.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Crypto } from '../crypto/index.js';
import type { CacheBus, ReadThroughCache } from '../storage/cache.js';
import type { CommittedChange } from './domain/pipeline.js';
import type { RequestRecord } from './http/types.js';
import { SeriesHistogram, type HistogramSeries } from './seriesHistogram.js';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PATCH', 'PUT', 'DELETE']);
/** The route label of a request no declared route matched (the UI's files, 404s). */
export const UNMATCHED_ROUTE = 'unmatched';

/** Login routes: their answers are the login outcomes. */
const LOGIN_ROUTES: Record<string, string> = {
  'POST /api/v1/auth/universal-auth/login': 'machine',
  'POST /api/v3/auth/login': 'user',
};

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
  caches: Record<string, Pick<ReadThroughCache<unknown>, 'counts'>>;
  crypto: Pick<Crypto, 'poolStats'>;
  bus: Pick<CacheBus, 'kind' | 'live'>;
  /** postgres.js's configured pool size (it exposes no in-use or waiting counts). */
  dbPoolMax: number;
  /** The embedded database's disk (absent on PostgreSQL): the last look, and the reserve. */
  disk?: { state(): { freeBytes: number } | undefined; readonly reserveBytes: number };
}

export function createMetrics() {
  const registry = new Registry();
  const registers = [registry];
  collectDefaultMetrics({ register: registry });

  // Counted per series here and handed to the counter at scrape time: prom-client's inc()
  // hashes its label object on every call, which the per-request path cannot afford.
  const requestSeries = new Map<string, Map<string, Map<number, RequestSeries>>>();
  new Counter({
    name: 'vault_http_requests_total',
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
    name: 'vault_http_request_duration_seconds',
    help: 'Time from a request arriving to its answer being written, by route template and method.',
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const logins = new Counter({
    name: 'vault_logins_total',
    help: 'Login attempts by kind (machine: Universal Auth, user: administrator) and outcome (success, failure, locked_out, invalid, error).',
    labelNames: ['kind', 'outcome'] as const,
    registers,
  });
  const cryptoTasks = new SeriesHistogram({
    name: 'vault_crypto_task_duration_seconds',
    help: 'Crypto worker tasks by operation: time from submission to answer, queue wait included.',
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const cryptoSeries = new Map<string, HistogramSeries>();
  const coalesced = new Counter({
    name: 'vault_secret_reads_coalesced_total',
    help: 'Secret reads that shared a decryption task already under way for the same folder version.',
    registers,
  });
  const auditAppend = new Histogram({
    name: 'vault_audit_append_duration_seconds',
    help: 'Time to append one audit entry (inside the change transaction).',
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const invalidation = new Histogram({
    name: 'vault_invalidation_publish_duration_seconds',
    help: 'Time from publishing a cache invalidation after a commit to every replica having applied it (Redis: acknowledgements; in-process: immediate).',
    buckets: LATENCY_BUCKETS,
    registers,
  });

  /** The series of one route, method (one of METHODS, or OTHER) and status. */
  function requestSeriesOf(route: string, m: string, status: number): RequestSeries {
    const kind = route === UNMATCHED_ROUTE ? undefined : LOGIN_ROUTES[`${m} ${route}`];
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
    name: 'vault_cache_requests_total',
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
    name: 'vault_crypto_pool_queue_depth',
    help: 'Crypto tasks waiting for a free worker.',
    registers,
    collect() {
      if (observed) this.set(observed.crypto.poolStats().queueSize);
    },
  });
  new Gauge({
    name: 'vault_crypto_pool_threads',
    help: 'Crypto worker threads running.',
    registers,
    collect() {
      if (observed) this.set(observed.crypto.poolStats().threads);
    },
  });
  new Gauge({
    name: 'vault_crypto_pool_utilization_ratio',
    help: "Share of the crypto pool's capacity used since start (0..1).",
    registers,
    collect() {
      if (observed) this.set(observed.crypto.poolStats().utilization);
    },
  });
  new Gauge({
    name: 'vault_redis_connected',
    help: 'Whether this replica hears the other replicas through Redis (1) or not (0; caches are bypassed). Absent without REDIS_URL.',
    // A label, so that the series is absent (not 0) when there is no Redis at all.
    labelNames: ['bus'] as const,
    registers,
    collect() {
      if (observed?.bus.kind === 'redis') this.set({ bus: 'redis' }, observed.bus.live ? 1 : 0);
    },
  });
  new Gauge({
    name: 'vault_db_pool_max_connections',
    help: 'Configured size of the database connection pool (postgres.js exposes no in-use or waiting counts).',
    registers,
    collect() {
      if (observed) this.set(observed.dbPoolMax);
    },
  });

  new Gauge({
    name: 'vault_data_dir_free_bytes',
    help: 'Free bytes on the disk holding DATA_DIR (the embedded database), looked at every 5 s and before writes. Absent on PostgreSQL.',
    registers,
    collect() {
      const state = observed?.disk?.state();
      if (state) this.set(state.freeBytes);
    },
  });
  new Gauge({
    name: 'vault_data_dir_reserve_bytes',
    help: 'DISK_RESERVE_BYTES: below this many free bytes on DATA_DIR, writes are refused (503). Absent on PostgreSQL.',
    registers,
    collect() {
      if (observed?.disk) this.set(observed.disk.reserveBytes);
    },
  });

  let front: { readonly unsentBytes: number; readonly slowClientCloses: number; readonly unsentRefusals: number } | undefined;
  new Gauge({
    name: 'vault_http_unsent_bytes',
    help: 'Bytes of replies held for clients that have not read them yet (capped by MAX_UNSENT_BYTES).',
    registers,
    collect() {
      if (front) this.set(front.unsentBytes);
    },
  });
  const slowLast = { closes: 0, refusals: 0 };
  new Counter({
    name: 'vault_http_slow_clients_total',
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

  return {
    registry,
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
