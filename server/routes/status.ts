// GET /api/status — health, for probes and humans.
import { z } from 'zod';
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
}
