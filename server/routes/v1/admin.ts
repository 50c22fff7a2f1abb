// The instance's first visit: is it set up, and the superadmin's registration.
import { z } from 'zod';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { profileBody, sessionReply, sessionSchema } from './users.js';

const signupBody = profileBody.extend({
  setupCode: z.string().max(256).optional().describe('Required when the config says setupCodeRequired (production mode)'),
});

export function registerAdminRoutes(api: Api, svc: Services) {
  api.get(
    '/api/v1/admin/config',
    { caller: 'none', summary: 'Whether the instance has its superadmin yet', response: z.object({ config: z.object({ initialized: z.boolean(), allowSignUp: z.boolean(), setupCodeRequired: z.boolean() }) }) },
    async () => {
      const initialized = await svc.users.initialized();
      // Until the superadmin exists, the registration screen asks for the code when needed.
      return { body: { config: { initialized, allowSignUp: false, setupCodeRequired: !initialized && svc.users.setupCodeRequired() } } };
    },
  );

  api.post(
    '/api/v1/admin/signup',
    { caller: 'none', summary: 'First visit: register the superadmin (once; with the setup code in production mode)', body: signupBody, response: sessionSchema },
    async ({ body, origin, req }) => {
      const s = await svc.users.signup({ ...body, ip: origin.ip ?? null });
      return sessionReply(req, svc, s, { message: 'Successfully set up admin account' });
    },
  );
}
