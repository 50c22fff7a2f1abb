// The running service: services wired to the HTTP front, listening.
import { LOG_LEVELS, type Config } from './config.js';
import { tuneGc } from './gcTuning.js';
import { VERIFIED_MAX_BYTES } from './domain/machineAuth.js';
import { createHttpServer } from './http/app.js';
import { loadStaticUi, UI_STATIC_ROUTE } from './http/static.js';
import { checkTlsPair, readTlsPair, watchTlsFiles, withPrivateCopy, type TlsPair } from './http/tls.js';
import { createApi, type Api } from './routes/api.js';
import { registerOpenApiRoute } from './routes/openapi.js';
import { registerStatusRoutes } from './routes/status.js';
import { registerAdminRoutes } from './routes/v1/admin.js';
import { registerAuditRoutes } from './routes/v1/audit.js';
import { registerAuthRoutes } from './routes/v1/auth.js';
import { registerEnvironmentRoutes } from './routes/v1/environments.js';
import { registerEventRoutes } from './routes/v1/events.js';
import { registerWebhookRoutes } from './routes/v1/webhooks.js';
import { registerExportRoutes } from './routes/v1/export.js';
import { registerIdentityRoutes } from './routes/v1/identities.js';
import { registerJwtAuthRoutes } from './routes/v1/jwtAuth.js';
import { registerOidcAuthRoutes } from './routes/v1/oidcAuth.js';
import { registerKubernetesAuthRoutes } from './routes/v1/kubernetesAuth.js';
import { registerTokenAuthRoutes } from './routes/v1/tokenAuth.js';
import { registerMembershipRoutes } from './routes/v1/memberships.js';
import { registerRoleRoutes } from './routes/v1/roles.js';
import { registerProjectRoutes } from './routes/v1/projects.js';
import { registerSecretImportRoutes } from './routes/v1/secretImports.js';
import { registerSecretVersionRoutes } from './routes/v1/secretVersions.js';
import { registerTagRoutes } from './routes/v1/tags.js';
import { registerUniversalAuthRoutes } from './routes/v1/universalAuth.js';
import { registerUserRoutes } from './routes/v1/users.js';
import { registerFolderRoutes } from './routes/v2/folders.js';
import { registerLoginRoutes } from './routes/v3/auth.js';
import { registerV3SecretRoutes } from './routes/v3/secrets.js';
import { registerV4SecretRoutes } from './routes/v4/secrets.js';
import { serviceHandlers, startAdminChannel } from './adminChannel.js';
import { clientAddress, ipMatcher } from './http/clientAddress.js';
import type { RequestRecord } from './http/types.js';
import type { Logger } from './log.js';
import { createMetrics, loginKind, loginOutcome, serveMetrics, type Metrics } from './metrics.js';
import { createServices, type Services } from './services.js';

export interface RunningService {
  port: number;
  /** The metrics listener's port, when METRICS_PORT is set. */
  metricsPort?: number;
  metrics: Metrics;
  services: Services;
  /** Every declared route (method, path, who may call it, its schemas). */
  routes: Api['routes'];
  /**
   * Graceful stop: readiness fails at once, the port closes (new connections are refused),
   * in-flight requests finish (each answer closes its connection) for up to `graceMs`,
   * then the remaining connections, the crypto pool, Redis and the database close.
   * Resolves false when the grace ran out with requests still in flight.
   */
  shutdown(graceMs: number): Promise<boolean>;
  /** Requests received and not yet answered. */
  inFlight(): number;
  close(): Promise<void>;
}

/** Every route module, in the order they are registered. */
const ROUTE_MODULES: ReadonlyArray<(api: Api, svc: Services) => void> = [
  registerStatusRoutes,
  registerAdminRoutes,
  registerLoginRoutes,
  registerAuthRoutes,
  registerUserRoutes,
  registerIdentityRoutes,
  registerUniversalAuthRoutes,
  registerJwtAuthRoutes,
  registerOidcAuthRoutes,
  registerKubernetesAuthRoutes,
  registerTokenAuthRoutes,
  registerProjectRoutes,
  registerEnvironmentRoutes,
  registerEventRoutes,
  registerWebhookRoutes,
  registerMembershipRoutes,
  registerRoleRoutes,
  registerFolderRoutes,
  registerV3SecretRoutes,
  registerV4SecretRoutes,
  registerSecretImportRoutes,
  registerTagRoutes,
  registerSecretVersionRoutes,
  registerExportRoutes,
  registerAuditRoutes,
  // Last: it describes every route above.
  registerOpenApiRoute,
];

/**
 * The request log line: what was asked of which route, by whom, from where, and how it
 * ended. Never the raw path (it carries project, folder and key names), the query
 * string, a header or a body.
 */
export function requestLogFields(r: RequestRecord, isTrustedProxy: (address: string) => boolean = () => false): Record<string, unknown> {
  return {
    reqId: r.reqId,
    method: r.method,
    route: r.route ?? null,
    status: r.status,
    durationMs: Math.round(r.durationMs * 1000) / 1000,
    actorKind: r.actor?.kind ?? null,
    actorId: r.actor?.id ?? null,
    // The same address the audit trail and the trusted-IP checks see (TRUSTED_PROXIES).
    client: clientAddress(r.req.remoteAddress, r.req.headers['x-forwarded-for'], isTrustedProxy),
  };
}

/**
 * The request line's level: `error` for a 5xx (the service failed), `warn` for refused
 * credentials, a refused permission and rate limits or lockouts (401, 403, 429: what an
 * on-call looks at for abuse), `info` for the other answers, and `debug` for a
 * successful UI file (most lines of a browser session, and none of them news).
 */
export function requestLogLevel(r: Pick<RequestRecord, 'status' | 'route'>): 'debug' | 'info' | 'warn' | 'error' {
  if (r.status >= 500) return 'error';
  if (r.status === 401 || r.status === 403 || r.status === 429) return 'warn';
  if (r.route === UI_STATIC_ROUTE && r.status < 400) return 'debug';
  return 'info';
}

/** A refused login (401: bad credentials; 429: locked out) as its warn line says it; undefined for anything else. */
export function loginRefusal(r: Pick<RequestRecord, 'status' | 'route' | 'method'>): { kind: string; outcome: string } | undefined {
  if (r.status !== 401 && r.status !== 429) return undefined;
  const kind = loginKind(r.method, r.route);
  return kind === undefined ? undefined : { kind, outcome: loginOutcome(r.status) };
}

export async function startService(config: Config, log: Logger): Promise<RunningService> {
  tuneGc();
  const metrics = createMetrics();
  const isTrustedProxy = ipMatcher(config.trustedProxies);
  const requestLines = LOG_LEVELS.indexOf(config.logLevel) <= LOG_LEVELS.indexOf('info');
  const debugLines = LOG_LEVELS.indexOf(config.logLevel) <= LOG_LEVELS.indexOf('debug');
  const services = await createServices(config, log, {
    cryptoTask: metrics.cryptoTask,
    coalescedRead: metrics.coalescedRead,
    committed: metrics.committed,
    webhookDelivery: metrics.webhookDelivery,
    dbCall: metrics.dbCall,
    auditChain: metrics.auditChain,
  });
  let metricsServer: Awaited<ReturnType<typeof serveMetrics>> | undefined;
  let admin: Awaited<ReturnType<typeof startAdminChannel>> | undefined;
  let stopTlsWatch: (() => void) | undefined;
  try {
    // Embedded database: `vault-standalone backup`, `audit-verify` and `reset-password` ask this process (the folder admits one).
    if (services.db.kind === 'embedded') admin = await startAdminChannel(config.dataDir, serviceHandlers(services), log);
    const { sweep: _sweep, ...caches } = services.caches;
    metrics.observe({
      caches: { ...caches, sessions: services.users.sessionCache },
      renderCacheBytes: () => services.crypto.poolStats().renderCacheBytes,
      held: {
        verifiedTokens: {
          get bytes() {
            return services.machineAuth.verifiedBytes;
          },
          maxBytes: VERIFIED_MAX_BYTES,
          get size() {
            return services.machineAuth.verifiedSize;
          },
        },
      },
      crypto: services.crypto,
      bus: services.bus,
      dbPoolMax: services.db.sql.options.max,
      webhookStates: () => services.store.webhooks.stateCounts(),
      disk: services.db.disk,
    });
    const http = createHttpServer({
      maxBodyBytes: config.maxBodyBytes,
      deadlineMs: config.requestDeadlineMs,
      slowClientTimeoutMs: config.slowClientTimeoutMs,
      maxUnsentBytes: config.maxUnsentBytes,
      logger: { error: (obj: Record<string, unknown>, msg: string) => log.error(obj, msg) },
      onNotFound: loadStaticUi()?.handler,
      // The request log names the client after the answer: then read it on arrival.
      readAddressOnArrival: requestLines,
      tls: config.tls,
      onResponse: (r) => {
        metrics.request(r);
        // Every answer gets this line, at the level of its status (requestLogLevel); a
        // 5xx also has the front's line with its error. Below LOG_LEVEL=info its fields,
        // the client's address among them, are not even built.
        if (!requestLines) return;
        const level = requestLogLevel(r);
        if (level === 'debug') {
          if (debugLines) log.debug?.(requestLogFields(r, isTrustedProxy), 'request');
          return;
        }
        const fields = requestLogFields(r, isTrustedProxy);
        log[level](fields, 'request');
        const refused = loginRefusal(r);
        if (refused !== undefined) {
          log.warn(
            { event: 'login-refused', ...refused, reqId: r.reqId, client: fields.client },
            `${refused.kind} login refused (${refused.outcome === 'locked_out' ? 'locked out' : 'bad credentials'})`,
          );
        }
      },
    });
    metrics.observeFront(http);
    const api = createApi(http.router, services.auth, { trustedProxies: config.trustedProxies });
    for (const register of ROUTE_MODULES) register(api, services);
    if (config.metricsPort !== undefined) {
      metricsServer = await serveMetrics(metrics, config.metricsPort, config.metricsHost);
      log.info(
        { event: 'metrics', host: config.metricsHost, port: metricsServer.port },
        `metrics on http://${config.metricsHost}:${metricsServer.port}/metrics`,
      );
    }
    const port = await http.listen(config.port, config.host);
    if (config.tls !== undefined) {
      const files = config.tls;
      const first = checkTlsPair(files);
      log.info({ event: 'tls', serial: first.serial, subject: first.subject, validTo: first.validTo }, `serving HTTPS with certificate ${first.serial}`);
      stopTlsWatch = watchTlsFiles(files, () => {
        let pair: TlsPair;
        try {
          pair = readTlsPair(files);
        } catch (err) {
          // Mid-rotation (one file written, not the other) or a bad pair: keep the old one.
          log.warn({ event: 'tls_reload_failed', err: (err as Error).message }, 'TLS files changed but the pair is not usable; still serving the previous certificate');
          return;
        }
        const { info } = pair;
        try {
          // Served to clients that name the service by one of the certificate's DNS names
          // (SNI); see HttpServer.serveCertificate.
          withPrivateCopy(pair, (copy) => http.serveCertificate(info.dnsNames, copy));
        } catch (err) {
          log.error({ event: 'tls_reload_failed', err: (err as Error).message }, 'TLS reload failed; still serving the previous certificate');
          return;
        }
        log.info(
          { event: 'tls_reloaded', serial: info.serial, subject: info.subject, validTo: info.validTo, names: info.dnsNames },
          `TLS certificate reloaded: ${info.serial}`,
        );
      });
    }
    return {
      port,
      metricsPort: metricsServer?.port,
      metrics,
      services,
      routes: api.routes,
      inFlight: () => http.inFlight,
      async shutdown(graceMs: number) {
        services.lifecycle.shuttingDown = true;
        stopTlsWatch?.();
        http.close();
        const drained = await http.drain(graceMs);
        http.close(true);
        await metricsServer?.close();
        await admin?.close();
        await services.close();
        return drained;
      },
      async close() {
        services.lifecycle.shuttingDown = true;
        stopTlsWatch?.();
        http.close(true);
        await metricsServer?.close();
        await admin?.close();
        await services.close();
      },
    };
  } catch (err) {
    await admin?.close();
    await metricsServer?.close();
    await services.close();
    throw err;
  }
}
