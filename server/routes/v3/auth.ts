// A person's password login (Infisical's v3 path).
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { credentialsBody, sessionReply, sessionSchema } from '../v1/users.js';

export function registerLoginRoutes(api: Api, svc: Services) {
  api.post(
    '/api/v3/auth/login',
    { caller: 'none', summary: 'Log a person in with e-mail and password', body: credentialsBody, response: sessionSchema },
    async ({ body, origin, req }) => sessionReply(req, svc, await svc.users.login({ ...body, ip: origin.ip ?? null })),
  );
}
