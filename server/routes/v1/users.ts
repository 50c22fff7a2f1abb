// First visit (superadmin registration), password login, logout, and who am I.
import { z } from 'zod';
import { clearedSessionCookie, sessionCookie } from '../../auth/authenticate.js';
import { AppError } from '../../errors.js';
import { parseJsonBody } from '../../http/body.js';
import type { HttpRequest, Router } from '../../http/types.js';
import type { Services } from '../../services.js';
import type { PublicUser, SessionResult } from '../../domain/users.js';
import { parse } from '../input.js';

const str = (name: string, max: number) => z.string({ error: `${name} is required` }).max(max);
const signupBody = z.object({
  email: str('email', 320),
  password: str('password', 256),
  firstName: str('firstName', 64),
  lastName: str('lastName', 64).optional(),
});
const loginBody = z.object({ email: str('email', 320), password: str('password', 256) });
const createUserBody = signupBody;

const userJson = (u: PublicUser) => ({
  id: u.id,
  email: u.email,
  username: u.email,
  firstName: u.firstName,
  lastName: u.lastName,
  superAdmin: u.superAdmin,
  createdAt: u.createdAt.toISOString(),
});

function sessionReply(req: HttpRequest, svc: Services, s: SessionResult, extra: Record<string, unknown> = {}) {
  return {
    headers: { 'Set-Cookie': sessionCookie(req, svc.config.cookieSecure, s.token, svc.config.sessionTtlSeconds) },
    body: { ...extra, user: s.user, token: s.token, csrfToken: s.csrfToken, expiresAt: s.expiresAt.toISOString() },
  };
}

export function registerUserRoutes(router: Router, svc: Services) {
  router.get('/api/v1/admin/config', async () => ({
    body: { config: { initialized: await svc.users.initialized(), allowSignUp: false } },
  }));

  router.post('/api/v1/admin/signup', async (req) => {
    const b = parse(signupBody, parseJsonBody(req));
    const s = await svc.users.signup({ ...b, ip: req.remoteAddress });
    return sessionReply(req, svc, s, { message: 'Successfully set up admin account' });
  });

  router.post('/api/v3/auth/login', async (req) => {
    const b = parse(loginBody, parseJsonBody(req));
    return sessionReply(req, svc, await svc.users.login({ ...b, ip: req.remoteAddress }));
  });

  router.post('/api/v1/auth/logout', async (req) => {
    const actor = await svc.auth.actor(req);
    if (actor.kind !== 'user' || !actor.sessionId) throw new AppError('BAD_REQUEST', 'Machine identities revoke their token with /api/v1/auth/token/revoke');
    await svc.users.logout(actor.sessionId);
    return {
      headers: { 'Set-Cookie': clearedSessionCookie(req, svc.config.cookieSecure) },
      body: { message: 'Successfully logged out' },
    };
  });

  router.get('/api/v1/users/me', async (req) => {
    const actor = await svc.auth.actor(req);
    if (actor.kind !== 'user') throw new AppError('FORBIDDEN', 'Only people have a user profile');
    const u = await svc.store.users.byId(actor.userId);
    if (!u) throw new AppError('TOKEN_INVALID', 'Session ended; log in again');
    // The CSRF token is readable only by a same-origin page (no CORS), which needs it
    // again after a reload: the session cookie itself is HttpOnly.
    const csrfToken = actor.sessionId ? svc.users.csrfTokenFor(actor.sessionId) : undefined;
    return { body: { user: { id: u.id, email: u.email, firstName: u.firstName, lastName: u.lastName, superAdmin: u.isSuperadmin }, csrfToken } };
  });

  // People, for the superadmin: this service's own (Infisical invites by e-mail).
  router.get('/api/v1/users', async (req) => {
    const actor = await svc.auth.actor(req);
    return { body: { users: (await svc.users.listUsers(actor)).map(userJson) } };
  });

  router.post('/api/v1/users', async (req) => {
    const actor = await svc.auth.actor(req);
    const b = parse(createUserBody, parseJsonBody(req));
    return { body: { user: userJson(await svc.users.createUser(actor, b, req.remoteAddress || null)) } };
  });
}
