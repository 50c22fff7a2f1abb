// People: who am I, and (superadmin) the people of the instance — this service's own
// paths (Infisical invites by e-mail). First visit and login are in admin.ts and
// v3/auth.ts.
import { z } from 'zod';
import { AppError } from '../../errors.js';
import type { HttpRequest } from '../../http/types.js';
import type { Services } from '../../services.js';
import { sessionCookie } from '../../auth/authenticate.js';
import type { PublicUser, SessionResult } from '../../domain/users.js';
import type { Api } from '../api.js';
import { isoString } from '../shape.js';

const str = (name: string, max: number) => z.string({ error: `${name} is required` }).max(max);

export const profileBody = z.object({
  email: str('email', 320),
  password: str('password', 256),
  firstName: str('firstName', 64),
  lastName: str('lastName', 64).optional(),
});
export const credentialsBody = z.object({ email: str('email', 320), password: str('password', 256) });

const profile = { id: z.string(), email: z.string(), firstName: z.string(), lastName: z.string(), superAdmin: z.boolean() };
export const userSchema = z.object({ ...profile, username: z.string(), disabled: z.boolean(), createdAt: isoString });
const oneUser = z.object({ user: userSchema });
export const passwordChangeBody = z.object({ oldPassword: str('oldPassword', 256), newPassword: str('newPassword', 256) });
export const passwordResetBody = z.object({ newPassword: str('newPassword', 256) });
const meSchema = z.object({ user: z.object(profile), csrfToken: z.string().optional() });
/** A new session: login and the first visit's signup. */
export const sessionSchema = z.object({
  message: z.string().optional(),
  user: z.object(profile),
  token: z.string(),
  csrfToken: z.string(),
  expiresAt: isoString,
});

export const userJson = (u: PublicUser) => ({
  id: u.id,
  email: u.email,
  username: u.email,
  firstName: u.firstName,
  lastName: u.lastName,
  superAdmin: u.superAdmin,
  disabled: u.disabled,
  createdAt: u.createdAt.toISOString(),
});

/** A new session: the token in the body (API clients) and in an HttpOnly cookie (the browser). */
export function sessionReply(req: HttpRequest, svc: Services, s: SessionResult, extra: Record<string, unknown> = {}) {
  return {
    headers: { 'Set-Cookie': sessionCookie(req, svc.config.cookieSecure, s.token, svc.config.sessionTtlSeconds) },
    body: { ...extra, user: s.user, token: s.token, csrfToken: s.csrfToken, expiresAt: s.expiresAt.toISOString() },
  };
}

export function registerUserRoutes(api: Api, svc: Services) {
  api.get(
    '/api/v1/users/me',
    { caller: 'user', summary: "The caller's own profile, and the session's CSRF token", refuseMachine: () => new AppError('FORBIDDEN', 'Only people have a user profile'), response: meSchema },
    async ({ actor }) => {
      const u = await svc.users.me(actor);
      // The CSRF token is readable only by a same-origin page (no CORS), which needs it
      // again after a reload: the session cookie itself is HttpOnly.
      const csrfToken = actor.sessionId ? svc.users.csrfTokenFor(actor.sessionId) : undefined;
      return { body: { user: { id: u.id, email: u.email, firstName: u.firstName, lastName: u.lastName, superAdmin: u.superAdmin }, csrfToken } };
    },
  );

  api.get(
    '/api/v1/users',
    { caller: 'any', summary: 'Every person of the instance (superadmin)', response: z.object({ users: z.array(userSchema) }) },
    async ({ actor }) => ({ body: { users: (await svc.users.listUsers(actor)).map(userJson) } }),
  );

  api.post(
    '/api/v1/users',
    { caller: 'any', summary: 'Add a person (superadmin)', body: profileBody, response: z.object({ user: userSchema }) },
    async ({ actor, body, origin }) => ({ body: { user: userJson(await svc.users.createUser(actor, body, origin)) } }),
  );

  const peopleOnly = () => new AppError('FORBIDDEN', 'Only people have a password');
  api.post(
    '/api/v1/users/me/password',
    { caller: 'user', summary: 'Change my password (the current one is required); every session of mine ends, this answer is a new one', refuseMachine: peopleOnly, body: passwordChangeBody, response: sessionSchema },
    async ({ actor, body, origin, req }) => {
      const s = await svc.users.changePassword(actor, body, origin.ip ?? null);
      return sessionReply(req, svc, s, { message: 'Successfully changed password' });
    },
  );

  api.post(
    '/api/v1/users/:userId/password',
    { caller: 'any', summary: "Set a person's password (superadmin); their sessions end at once", body: passwordResetBody, response: oneUser },
    async ({ actor, params, body, origin }) => ({ body: { user: userJson(await svc.users.resetPassword(actor, { userId: params.userId }, body.newPassword, origin)) } }),
  );

  api.post(
    '/api/v1/users/:userId/disable',
    { caller: 'any', summary: 'Disable a person (superadmin): no login, their sessions end at once; not the last superadmin', response: oneUser },
    async ({ actor, params, origin }) => ({ body: { user: userJson(await svc.users.disableUser(actor, params.userId, origin)) } }),
  );

  api.post(
    '/api/v1/users/:userId/enable',
    { caller: 'any', summary: 'Enable a disabled person again (superadmin)', response: oneUser },
    async ({ actor, params, origin }) => ({ body: { user: userJson(await svc.users.enableUser(actor, params.userId, origin)) } }),
  );

  api.delete(
    '/api/v1/users/:userId',
    { caller: 'any', summary: 'Delete a person (superadmin): their sessions and project roles go at once; not the last superadmin', response: oneUser },
    async ({ actor, params, origin }) => ({ body: { user: userJson(await svc.users.deleteUser(actor, params.userId, origin)) } }),
  );
}
