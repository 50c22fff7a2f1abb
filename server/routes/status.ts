// GET /api/status (the contract's, static), and the probes: GET /api/health/live (the
// event loop answers) and GET /api/health/ready (the dependencies answer; 503 otherwise).
import { z } from 'zod';
import { RETRY_AFTER_SECONDS } from '../errors.js';
import type { Services } from '../services.js';
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
      summary: 'Readiness: database reachable, migrations applied, Redis subscribed (when configured), crypto pool alive, not shutting down; 503 naming what failed',
      response: z.object({ status: z.literal('ready'), checks: z.record(z.string(), z.string()) }),
    },
    async ({ req }) => {
      const { ready, checks } = await svc.readiness();
      if (ready) return { body: { status: 'ready' as const, checks } };
      // auditTrail is reported, never a reason to be not ready (services.ts readiness).
      const failed = Object.entries(checks).filter(([k, v]) => k !== 'auditTrail' && v !== 'ok' && v !== 'not configured').map(([k]) => k);
      return {
        status: 503,
        headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
        body: { reqId: req.reqId, statusCode: 503, message: `Not ready: ${failed.join(', ')}`, error: 'ServiceUnavailable', checks },
      };
    },
  );
}
