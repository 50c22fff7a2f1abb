// The only place that talks to the service: same origin, session cookie (HttpOnly, set by
// login/signup), CSRF token header on every state-changing request.

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: unknown;
  constructor(status: number, code: string, message: string, details?: unknown) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

/** How far a delete or change has been confirmed: plain, with force, or also overriding protected keys. */
export type Confirmation = 'plain' | 'force' | 'overrideImmutable';

/**
 * The confirmation a refused request asks for next (the API names it in a 409's
 * `details.requires`), or undefined when asking again would not help.
 */
export function nextConfirmation(err: unknown, current: Confirmation): Exclude<Confirmation, 'plain'> | undefined {
  if (!(err instanceof ApiError) || err.status !== 409) return undefined;
  const requires = (err.details as { requires?: unknown } | undefined)?.requires;
  if (requires === 'force' && current === 'plain') return 'force';
  if (requires === 'overrideImmutable' && current !== 'overrideImmutable') return 'overrideImmutable';
  return undefined;
}

/** The query flags a confirmation sends. */
export function confirmationFlags(c: Confirmation): { force?: true; overrideImmutable?: true } {
  return c === 'plain' ? {} : c === 'force' ? { force: true } : { force: true, overrideImmutable: true };
}

let csrfToken: string | undefined;
let onUnauthorized: (() => void) | undefined;

export function setCsrfToken(token: string | undefined): void {
  csrfToken = token;
}

/** Called when an authenticated request answers 401 (session ended elsewhere). */
export function setUnauthorizedHandler(fn: () => void): void {
  onUnauthorized = fn;
}

export type Query = Record<string, string | number | boolean | undefined | null>;

export function withQuery(path: string, query?: Query): string {
  if (!query) return path;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null || v === '') continue;
    q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

export async function api<T = unknown>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, opts: { body?: unknown; query?: Query; quiet401?: boolean } = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['x-csrf-token'] = csrfToken;
  let res: Response;
  try {
    res = await fetch(withQuery(path, opts.query), {
      method,
      headers,
      credentials: 'same-origin',
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
  } catch {
    throw new ApiError(0, 'NetworkError', 'Cannot reach the service. Check your connection and try again.');
  }
  const data = parseBody(await res.text());
  if (!res.ok) {
    const body = (data ?? {}) as { message?: unknown; error?: unknown; details?: unknown };
    const message = typeof body.message === 'string' && body.message !== '' ? body.message : `Request failed (${res.status})`;
    if (res.status === 401 && !opts.quiet401) onUnauthorized?.();
    throw new ApiError(res.status, typeof body.error === 'string' ? body.error : 'Error', message, body.details);
  }
  return data as T;
}

/**
 * Opens a server-sent event stream (POST, as Infisical's event subscription is): the
 * session cookie and the CSRF header as every write; the caller reads `res.body`.
 */
export function openEventStream(path: string, body: unknown, opts: { lastEventId?: string; signal: AbortSignal }): Promise<Response> {
  const headers: Record<string, string> = { accept: 'text/event-stream', 'content-type': 'application/json' };
  if (csrfToken) headers['x-csrf-token'] = csrfToken;
  if (opts.lastEventId) headers['last-event-id'] = opts.lastEventId;
  return fetch(path, { method: 'POST', headers, credentials: 'same-origin', body: JSON.stringify(body), signal: opts.signal });
}

/** A response body as JSON; undefined when it is empty or not JSON (a proxy's error page, say). */
function parseBody(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function errorText(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error) return err.message;
  return 'Something went wrong';
}

// ---- reads more than one screen makes ----------------------------------------------------

/** Every machine identity (superadmin only). */
export function listIdentities(): Promise<Identity[]> {
  return api<{ identities: { identity: Identity }[] }>('GET', '/api/v1/identities').then((r) => r.identities.map((x) => x.identity));
}

/** Everyone who can log in (superadmin only). */
export function listPeople(): Promise<Person[]> {
  return api<{ users: Person[] }>('GET', '/api/v1/users').then((r) => r.users);
}

/** One secret with its value, where `scope` says. */
export function readSecret(scope: { projectId: string; environment: string; secretPath: string }, key: string): Promise<Secret> {
  return api<{ secret: Secret }>('GET', `/api/v4/secrets/${encodeURIComponent(key)}`, { query: scope }).then((r) => r.secret);
}

// ---- shapes used by the screens ---------------------------------------------------------

export interface User {
  id: string;
  email: string;
  firstName: string;
  lastName: string;
  superAdmin: boolean;
}
/** A person as GET /api/v1/users lists them (superadmin only). */
export interface Person {
  id: string;
  email: string;
  username: string;
  firstName: string;
  lastName: string;
  superAdmin: boolean;
  disabled: boolean;
  createdAt: string;
}

export function personName(p: { firstName: string; lastName: string; email: string }): string {
  return `${p.firstName} ${p.lastName}`.trim() || p.email;
}

export interface Environment {
  id: string;
  name: string;
  slug: string;
  position: number;
}
export interface Project {
  id: string;
  name: string;
  slug: string;
  environments: Environment[];
  createdAt: string;
  updatedAt: string;
}
export interface Folder {
  id: string;
  name: string;
  path: string;
  parentId: string | null;
}
/** A project tag (GET /api/v1/projects/:projectId/tags); secrets carry {id, slug, name, color}. */
export interface Tag {
  id: string;
  slug: string;
  color: string | null;
}
export interface Secret {
  id: string;
  tags: Tag[];
  secretKey: string;
  secretValue: string;
  secretComment: string;
  version: number;
  secretPath: string;
  createdAt: string;
  updatedAt: string;
}
/** An import of a folder (GET /api/v1/secret-imports). */
export interface SecretImport {
  id: string;
  importPath: string;
  importEnv: { id: string; name: string; slug: string };
  position: number;
}
/** One import as a list with include_imports answers it. */
export interface ImportedFolder {
  secretPath: string;
  environment: string;
  folderId: string;
  secrets: { secretKey: string }[];
}
export interface SecretVersion {
  id: string;
  version: number;
  secretKey: string;
  secretValue: string;
  secretComment: string;
  createdAt: string;
  actor: { type: string; id: string | null };
}
export interface Identity {
  id: string;
  name: string;
  authMethods: string[];
  createdAt: string;
}
export interface UniversalAuth {
  clientId: string;
  accessTokenTTL: number;
  accessTokenMaxTTL: number;
}
export interface ClientSecretData {
  id: string;
  description: string;
  clientSecretPrefix: string;
  isClientSecretRevoked: boolean;
  lastUsedAt: string | null;
  createdAt: string;
  numUses: number;
  numUsesLimit: number;
  /** Seconds from creation; 0: never expires. */
  ttl: number;
}
export interface IdentityMembership {
  id: string;
  identityId: string;
  role: string;
  identity: { id: string; name: string; authMethods: string[] };
  createdAt: string;
}
export interface UserMembership {
  id: string;
  userId: string;
  role: string;
  user: { id: string; email: string; firstName: string; lastName: string };
  createdAt: string;
}
export interface AuditLog {
  id: string;
  event: { type: string; metadata: Record<string, unknown> };
  actor: { type: string; metadata: Record<string, unknown> };
  projectId: string | null;
  ipAddress: string | null;
  createdAt: string;
}
/** The server's latest full walk of every entry and checkpoint (it runs in the background, never per visit). */
export interface FullWalk {
  last: { runId: string; finishedAt: string; ageSeconds: number; ok: boolean; entries: number; read: number; brokenAt: number | null; reason: string | null } | null;
  recordInvalid?: true;
  running: { runId: string; startedAt: string; entries: number; of: number } | null;
}
/** When the verdict was reached (the server verifies incrementally from a checkpoint on each visit). */
interface VerifyFreshness {
  checkedAt?: string;
  ageSeconds?: number;
  inProgress?: boolean;
  fullWalk?: FullWalk;
}
export type AuditVerify = (
  | { ok: true; entries: number; head?: { entries: number; lastId: number; mac: string } }
  // brokenAt is null when every entry verifies but the head anchor does not (newest entries removed, anchor edited).
  | { ok: false; brokenAt: number | null; entries: number; reason?: string }
  // No verdict yet: the server's walk has verified `entries` of `of` and goes on at the next visit.
  | { ok: null; entries: number; of: number }
) &
  VerifyFreshness;

export const ROLES = ['admin', 'member', 'viewer', 'no-access'] as const;

/** One rule of a custom role, as the service (and Infisical) write it. */
export interface RoleRule {
  subject: 'secrets';
  action: string[];
  conditions?: { environment?: string; secretPath?: { $glob: string } };
  inverted?: boolean;
}
export interface ProjectRole {
  id: string;
  slug: string;
  name: string;
  description: string | null;
  /** Only when read by slug: the list leaves the rules out. */
  permissions?: RoleRule[];
  version?: number;
  createdAt: string;
}

/** As the service derives it (server/domain/projects.ts slugify), to show before saving. */
export function slugify(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64)
    .replace(/-+$/, '');
}
