// GET /api/status (the contract's, static), and the probes: GET /api/health/live (the
// event loop answers), GET /api/health/ready (this replica can serve: 503 only for what is
// its own) and GET /api/health/dependencies (the database and Redis answer; 503 otherwise).
// As Vault's sys/health separates "sealed" (this node) from "standby" (the cluster), an
// outage every replica shares is not a reason for Kubernetes to remove them all from the
// Service: clients then get 503 with Retry-After from us instead of "connection refused".
import { z } from 'zod';
import { RETRY_AFTER_SECONDS } from '../errors.js';
import { SHARED_CHECKS, type Services } from '../services.js';
import type { Api } from './api.js';

const statusSchema = z.object({
  date: z.string(),
  message: z.literal('Ok'),
  emailConfigured: z.boolean(),
  redisConfigured: z.boolean(),
  secretScanningConfigured: z.boolean(),
  inviteOnlySignup: z.boolean(),
});

export function registerStatusRoutes(api: Api, svc: Services) {
  api.get('/api/status', { caller: 'none', summary: 'Service status (Infisical shape)', response: statusSchema }, () => ({
    body: {
      date: new Date().toISOString(),
      message: 'Ok',
      emailConfigured: false,
      redisConfigured: svc.bus.kind === 'redis',
      secretScanningConfigured: false,
      inviteOnlySignup: false,
    },
  }));

  api.get(
    '/api/health/live',
    { caller: 'none', summary: 'Liveness: the process answers (no dependency is consulted)', response: z.object({ status: z.literal('ok') }) },
    () => ({ body: { status: 'ok' as const } }),
  );

  api.get(
    '/api/health/ready',
    {
      caller: 'none',
      summary:
        'Readiness of this replica: migrations applied, crypto pool alive, not shutting down, the embedded database answering and its disk above its reserve; 503 naming what failed. A PostgreSQL or Redis outage (shared by every replica) is reported in `checks`, not failed on',
      response: z.object({ status: z.literal('ready'), checks: z.record(z.string(), z.string()) }),
    },
    async ({ req }) => {
      const { ready, checks } = await svc.readiness();
      if (ready) return { body: { status: 'ready' as const, checks } };
      // auditTrail is reported, never a reason to be not ready (services.ts readiness).
      const failed = Object.entries(checks)
        .filter(([k, v]) => k !== 'auditTrail' && !SHARED_CHECKS.has(k) && v !== 'ok' && v !== 'not configured' && !v.startsWith('not checked') && !(k === 'disk' && v.startsWith('low')))
        .map(([k]) => k);
      if (failed.length === 0) failed.push('database');
      return {
        status: 503,
        headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
        body: { reqId: req.reqId, statusCode: 503, message: `Not ready: ${failed.join(', ')}`, error: 'ServiceUnavailable', checks },
      };
    },
  );

  api.get(
    '/api/health/dependencies',
    {
      caller: 'none',
      summary: 'The dependencies every replica shares: the database answers within 1 s, Redis subscribed (when configured); 503 naming what failed. For alerts, not for a readiness probe',
      response: z.object({ status: z.literal('ok'), checks: z.record(z.string(), z.string()) }),
    },
    async ({ req }) => {
      const { dependencies, checks } = await svc.readiness();
      const shared = { database: checks.database, redis: checks.redis };
      if (dependencies) return { body: { status: 'ok' as const, checks: shared } };
      const failed = Object.entries(shared).filter(([, v]) => v !== 'ok' && v !== 'not configured').map(([k]) => k);
      return {
        status: 503,
        headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
        body: { reqId: req.reqId, statusCode: 503, message: `Unavailable: ${failed.join(', ')}`, error: 'ServiceUnavailable', checks: shared },
      };
    },
  );
}
