// GET /api/status — health, for probes and humans.
import type { Router } from '../http/types.js';
import type { Services } from '../services.js';

export function registerStatusRoutes(router: Router, svc: Services) {
  router.get('/api/status', () => ({
    body: {
      date: new Date().toISOString(),
      message: 'Ok',
      emailConfigured: false,
      redisConfigured: svc.bus.kind === 'redis',
      secretScanningConfigured: false,
      inviteOnlySignup: false,
    },
  }));
}
