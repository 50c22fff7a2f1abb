// One way in for every authenticated route: a bearer token (machine access token or a
// person's session token), or the browser's session cookie, which additionally needs
// the CSRF token on every state-changing request.
import type { Actor } from '../domain/access.js';
import { MAX_BEARER_HEADER, type MachineAuth } from '../domain/machineAuth.js';
import type { Origin } from '../domain/pipeline.js';
import type { UsersDomain } from '../domain/users.js';
import { AppError } from '../errors.js';
import type { HttpRequest } from '../http/types.js';
import { tokenTypeOf } from './tokens.js';

export const SESSION_COOKIE = 'vault_session';
export const CSRF_HEADER = 'x-csrf-token';

export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

export type CookieSecureMode = 'auto' | 'always' | 'never';

/**
 * Whether the client reached the TLS-terminating proxy over HTTPS: the first
 * X-Forwarded-Proto value is the one the proxy nearest the client set. Only meaningful
 * when a trusted proxy sets (not passes on) the header.
 */
export function cameOverTls(req: HttpRequest): boolean {
  const proto = req.headers['x-forwarded-proto'];
  return proto !== undefined && proto.split(',')[0]!.trim().toLowerCase() === 'https';
}

function cookieAttributes(req: HttpRequest, mode: CookieSecureMode, maxAgeSeconds: number): string {
  const secure = mode === 'always' || (mode === 'auto' && cameOverTls(req));
  return `HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`;
}

/** The service itself speaks plain HTTP: Secure follows COOKIE_SECURE (see README). */
export function sessionCookie(req: HttpRequest, mode: CookieSecureMode, token: string, maxAgeSeconds: number): string {
  return `${SESSION_COOKIE}=${token}; ${cookieAttributes(req, mode, maxAgeSeconds)}`;
}

/** Same attributes as the session cookie: a browser only replaces a cookie that matches. */
export function clearedSessionCookie(req: HttpRequest, mode: CookieSecureMode): string {
  return `${SESSION_COOKIE}=; ${cookieAttributes(req, mode, 0)}`;
}

/** How many Authorization headers' token kinds are remembered (FIFO; ~0.5 KB each). */
export const TOKEN_KINDS_MAX = 1024;

export function authenticator(deps: { machineAuth: Pick<MachineAuth, 'authenticate'>; users: Pick<UsersDomain, 'authenticate' | 'checkCsrf'> }) {
  const { machineAuth, users } = deps;
  // The verifier each Authorization header goes to, by its exact text: the choice reads
  // the unverified JWT payload (base64 and JSON), which a sync's requests would otherwise
  // decode on every call. Only the choice is kept: each request is still verified.
  const kinds = new Map<string, 'session' | 'machine'>();
  function kindOf(authorization: string): 'session' | 'machine' {
    let kind = kinds.get(authorization);
    if (kind === undefined) {
      const m = /^Bearer[ ]+(\S{1,4096})[ ]*$/i.exec(authorization);
      kind = m && tokenTypeOf(m[1]!) === 'userSession' ? 'session' : 'machine';
      if (authorization.length > MAX_BEARER_HEADER) return kind;
      if (kinds.size >= TOKEN_KINDS_MAX) kinds.delete(kinds.keys().next().value!);
      kinds.set(authorization, kind);
    }
    return kind;
  }
  async function fromCookie(req: HttpRequest): Promise<Actor> {
    const cookie = readCookie(req.headers.cookie, SESSION_COOKIE);
    if (cookie) {
      const actor = await users.authenticate(cookie);
      if (req.method !== 'GET' && !users.checkCsrf(actor.sessionId, req.headers[CSRF_HEADER])) {
        throw new AppError('FORBIDDEN', 'Missing or invalid CSRF token');
      }
      return actor;
    }
    throw new AppError('UNAUTHORIZED', 'Token missing');
  }

  return {
    /**
     * `origin.ip`: the request's client address (server/http/clientAddress.ts), for access
     * tokens' trusted IPs. A machine token held by machineAuth is answered as a value (the
     * hot path: no promise); a refusal is always a rejected promise.
     */
    actor(req: HttpRequest, origin: Origin = {}): Actor | Promise<Actor> {
      try {
        const authorization = req.headers.authorization;
        if (authorization && authorization.trim() !== '') {
          if (kindOf(authorization) === 'session') {
            return users.authenticate(/^Bearer[ ]+(\S{1,4096})[ ]*$/i.exec(authorization)![1]!);
          }
          return machineAuth.authenticate(authorization, origin);
        }
        return fromCookie(req);
      } catch (err) {
        return Promise.reject(err);
      }
    },
  };
}
export type Authenticator = ReturnType<typeof authenticator>;
