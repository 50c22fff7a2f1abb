// Shared set-up of the administration API tests: a service with the superadmin signed
// up, people without superadmin rights, and machine identities with a project role.
import { SYSTEM } from '../../../server/domain/access.js';
import type { Role } from '../../../storage/memberships.js';
import { signupAdmin, type AdminSession } from '../../helpers/admin.js';
import { JSON_TYPE, request, type JsonResponse } from '../../helpers/http.js';
import { login, type TestService } from '../../helpers/service.js';

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** Calls `path` on `svc` with a bearer token (user session or machine access token). */
export function api(svc: { url: string }, method: Method, path: string, token?: string, json?: unknown): Promise<JsonResponse> {
  return request(`${svc.url}${path}`, { method, token, json });
}

export async function superadmin(svc: TestService): Promise<AdminSession> {
  return signupAdmin(svc.url);
}

/** A person without superadmin rights (there is no API to invite people yet). */
export async function plainUser(svc: TestService, email: string): Promise<{ userId: string; token: string }> {
  const password = 'a plain user passphrase';
  const user = await svc.services.store.users.insert({
    email,
    passwordHash: await svc.services.crypto.hashPassword(password),
    firstName: 'Pat',
    lastName: 'Plain',
    isSuperadmin: false,
  });
  const r = await request(`${svc.url}/api/v3/auth/login`, { method: 'POST', json: { email, password } });
  if (r.status !== 200) throw new Error(`login failed: ${r.status} ${JSON.stringify(r.body)}`);
  return { userId: user.id, token: r.body.token };
}

export interface Machine {
  identityId: string;
  clientId: string;
  clientSecret: string;
  token: string;
}

/** An identity with Universal Auth, logged in, with `role` in each project given. */
export async function machine(svc: TestService, name: string, roles: Array<[projectId: string, role: Role]> = []): Promise<Machine> {
  const ids = svc.services.identities;
  const identity = await ids.create(SYSTEM, { name });
  const ua = await ids.attachUniversalAuth(SYSTEM, identity.id);
  const { clientSecret } = await ids.createClientSecret(SYSTEM, identity.id);
  for (const [projectId, role] of roles) await svc.services.memberships.upsertIdentity(SYSTEM, { project: { id: projectId }, identityId: identity.id, role });
  const creds = { clientId: ua.clientId, clientSecret };
  return { identityId: identity.id, ...creds, token: await login(svc.url, creds) };
}

/** Asserts a contract-shaped JSON error. */
export function isError(t: any, r: JsonResponse, status: number, error?: string, message?: string | RegExp) {
  t.equal(r.status, status, `status ${status}${r.status !== status ? `: ${JSON.stringify(r.body)}` : ''}`);
  t.equal(r.contentType, JSON_TYPE, 'JSON content type');
  t.match(r.body, { reqId: /^req-/, statusCode: status });
  t.type(r.body?.message, 'string', 'message is a string');
  if (error !== undefined) t.equal(r.body?.error, error);
  if (message !== undefined) t.match(r.body?.message, message);
}

/** Row counts of every table an administration request may change. */
export async function snapshot(svc: TestService) {
  const sql = svc.services.store.sql;
  const [row] = await sql<Record<string, number>[]>`select
    (select count(*)::int from identities) as identities,
    (select count(*)::int from identity_universal_auth) as universal_auth,
    (select count(*)::int from identity_client_secrets) as client_secrets,
    (select count(*)::int from identity_client_secrets where is_revoked) as revoked_secrets,
    (select count(*)::int from identity_access_tokens) as access_tokens,
    (select count(*)::int from project_memberships) as memberships,
    (select string_agg(role, ',' order by id) from project_memberships) as roles,
    (select count(*)::int from audit_log) as audit`;
  return row!;
}
