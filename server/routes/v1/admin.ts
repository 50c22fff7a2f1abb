// The instance's first visit: is it set up, and the superadmin's registration.
import { z } from 'zod';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { profileBody, sessionReply, sessionSchema } from './users.js';

export function registerAdminRoutes(api: Api, svc: Services) {
  api.get(
    '/api/v1/admin/config',
    { caller: 'none', summary: 'Whether the instance has its superadmin yet', response: z.object({ config: z.object({ initialized: z.boolean(), allowSignUp: z.boolean() }) }) },
    async () => ({ body: { config: { initialized: await svc.users.initialized(), allowSignUp: false } } }),
  );

  api.post(
    '/api/v1/admin/signup',
    { caller: 'none', summary: 'First visit: register the superadmin (once)', body: profileBody, response: sessionSchema },
    async ({ body, origin, req }) => {
      const s = await svc.users.signup({ ...body, ip: origin.ip ?? null });
      return sessionReply(req, svc, s, { message: 'Successfully set up admin account' });
    },
  );
}
