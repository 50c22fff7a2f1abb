// Replay tests of clients that cannot be installed here: each sends exactly what the client
// sends (method, path and trailing slash, query spelling, headers, body fields including
// empty and null ones), read from the client's public source (each test names repository
// and file), and asserts the fields that client parses. Requests go through request()
// (../helpers/http.ts), so every JSON answer is also checked against the OpenAPI document.
import { SYSTEM } from '../../server/domain/access.js';
import { request, type JsonResponse } from '../helpers/http.js';
import { login, seedHomelab, startTestService, testEnv, type Seeded, type TestService } from '../helpers/service.js';

interface TapLike {
  teardown(fn: () => unknown): void;
}

export interface Replay {
  svc: TestService;
  seeded: Seeded;
  token: string;
  /** Sends one request as the client does; `query` is appended verbatim (its spelling is the point). */
  send(method: string, path: string, opts?: { query?: string; json?: unknown; headers?: Record<string, string>; token?: string | null }): Promise<JsonResponse>;
}

/** The service on the embedded database, homelab seeded, the identity an admin of it, logged in. */
export async function replay(t: TapLike, role: 'admin' | 'member' | 'viewer' = 'admin'): Promise<Replay> {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  const seeded = await seedHomelab(svc.services, { role });
  const token = await login(svc.url, seeded);
  const send: Replay['send'] = (method, path, opts = {}) =>
    request(`${svc.url}${path}${opts.query ? `?${opts.query}` : ''}`, {
      method,
      ...(opts.token === null ? {} : { token: opts.token ?? token }),
      headers: opts.headers,
      ...(opts.json === undefined ? {} : { json: opts.json }),
    });
  return { svc, seeded, token, send };
}

/** A folder `/app` in prod with DB_USER=app and DB_URL referencing it, and staging `/` imported into prod `/`. */
export async function seedAppFolder(r: Replay): Promise<void> {
  const project = { id: r.seeded.projectId };
  await r.svc.services.folders.create(SYSTEM, { project, environment: 'prod', name: 'app' });
  await r.svc.services.secrets.create(SYSTEM, { project, environment: 'prod', secretPath: '/app', key: 'DB_USER', value: 'app' });
  await r.svc.services.secrets.create(SYSTEM, { project, environment: 'prod', secretPath: '/app', key: 'DB_URL', value: 'pg://${DB_USER}@db' });
  await r.svc.services.secrets.create(SYSTEM, { project, environment: 'staging', secretPath: '/', key: 'FROM_STAGING', value: 'imported' });
  await r.svc.services.secretImports.create(SYSTEM, { project, environment: 'prod', path: '/', import: { environment: 'staging', path: '/' } });
}
