// Every error case of the contract for the machine read path, with its exact status,
// error name and message, and the JSON content type.
import t from 'tap';
import { SYSTEM } from '../../server/domain/access.js';
import { ESO_LIST_QUERY, JSON_TYPE, request, type JsonResponse } from '../helpers/http.js';
import { BACKENDS, login, seedHomelab, startTestService, testEnv } from '../helpers/service.js';

function isError(t: any, r: JsonResponse, status: number, error: string, message?: string | RegExp) {
  t.equal(r.status, status, `status ${status}`);
  t.equal(r.contentType, JSON_TYPE, 'JSON content type');
  t.match(r.body, { reqId: /^req-/, statusCode: status, error });
  t.type(r.body.message, 'string', 'message is a string');
  if (message !== undefined) t.match(r.body.message, message);
}

for (const backend of BACKENDS) {
  t.test(`contract errors (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend, { LOGIN_MAX_ATTEMPTS: '3', LOGIN_LOCKOUT_SECONDS: '300' }));
    const seeded = await seedHomelab(svc.services);
    const list = (q: string, token?: string) => request(`${svc.url}/api/v3/secrets/raw?${q}`, { token });
    const token = await login(svc.url, seeded);

    t.test('no token: 401 Token missing', async (t) => {
      isError(t, await list(ESO_LIST_QUERY), 401, 'UnauthorizedError', 'Token missing');
      isError(t, await request(`${svc.url}/api/v3/secrets/raw/GATEWAY_TOKEN?environment=prod&workspaceSlug=homelab`), 401, 'UnauthorizedError', 'Token missing');
      isError(t, await request(`${svc.url}/api/v1/projects/slug/homelab`), 401, 'UnauthorizedError', 'Token missing');
    });

    t.test('bad token: 401 TokenError', async (t) => {
      isError(t, await list(ESO_LIST_QUERY, 'not-a-jwt'), 401, 'TokenError');
      isError(t, await list(ESO_LIST_QUERY, `${token.slice(0, -2)}xx`), 401, 'TokenError');
      const basic = await request(`${svc.url}/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { headers: { authorization: 'Basic abc' } });
      isError(t, basic, 401, 'TokenError');
    });

    t.test('unknown project slug: 404, before membership', async (t) => {
      isError(t, await list('environment=prod&workspaceSlug=homelab2', token), 404, 'NotFound', "Project with slug 'homelab2' not found");
      isError(t, await request(`${svc.url}/api/v1/projects/slug/nope`, { token }), 404, 'NotFound', "Project with slug 'nope' not found");
    });

    t.test('unknown environment, folder and key: 404 naming it', async (t) => {
      isError(t, await list('environment=qa&workspaceSlug=homelab', token), 404, 'NotFound', /qa/);
      isError(t, await list('environment=prod&workspaceSlug=homelab&secretPath=%2Fnope', token), 404, 'SecretPathNotFound', /\/nope/);
      isError(
        t,
        await request(`${svc.url}/api/v3/secrets/raw/NOPE?environment=prod&workspaceSlug=homelab`, { token }),
        404, 'NotFound', "Secret with name 'NOPE' not found",
      );
      isError(
        t,
        await request(`${svc.url}/api/v3/secrets/raw/GATEWAY_TOKEN?environment=prod&workspaceSlug=homelab&version=9`, { token }),
        404, 'NotFound',
      );
    });

    t.test('missing environment or project: 422', async (t) => {
      isError(t, await list('workspaceSlug=homelab', token), 422, 'ValidationFailure', /environment/);
      isError(t, await list('environment=prod&workspaceSlug=&workspaceId=', token), 422, 'ValidationFailure', /workspace/);
      isError(t, await list('environment=prod&workspaceSlug=homelab&recursive=maybe', token), 422, 'ValidationFailure', /recursive/);
    });

    t.test('not a member: 404 as a missing project; no-access: 403; viewer reads', async (t) => {
      const other = await svc.services.projects.create(SYSTEM, { name: 'other' });
      isError(t, await list('environment=prod&workspaceSlug=other', token), 404, 'NotFound', "Project with slug 'other' not found");
      isError(t, await list(`environment=prod&workspaceId=${other.id}`, token), 404, 'NotFound', `Project with ID '${other.id}' not found`);
      isError(t, await request(`${svc.url}/api/v1/projects/slug/other`, { token }), 404, 'NotFound', "Project with slug 'other' not found");

      await svc.services.memberships.upsertIdentity(SYSTEM, { project: { slug: 'homelab' }, identityId: seeded.identityId, role: 'no-access' });
      isError(t, await list(ESO_LIST_QUERY, token), 403, 'PermissionDenied', 'You are not allowed to access this resource');
      await svc.services.memberships.upsertIdentity(SYSTEM, { project: { slug: 'homelab' }, identityId: seeded.identityId, role: 'viewer' });
      t.equal((await list(ESO_LIST_QUERY, token)).status, 200, 'the role change applies on the very next request');
    });

    t.test('login failures: 401 Invalid credentials, then lockout', async (t) => {
      const attempt = (body: unknown) => request(`${svc.url}/api/v1/auth/universal-auth/login`, { method: 'POST', json: body });
      isError(t, await attempt({ clientId: '00000000-0000-0000-0000-000000000000', clientSecret: seeded.clientSecret }), 401, 'UnauthorizedError', 'Invalid credentials');
      isError(t, await attempt({ clientId: 'placeholder', clientSecret: 'placeholder' }), 401, 'UnauthorizedError', 'Invalid credentials');
      isError(t, await attempt({ clientId: seeded.clientId }), 422, 'ValidationFailure', /clientSecret/);
      isError(t, await attempt({ clientId: seeded.clientId, clientSecret: 42 }), 422, 'ValidationFailure');

      // A second identity, so the lockout does not disturb the others.
      const victim = await svc.services.identities.create(SYSTEM, { name: 'lockout' });
      const ua = await svc.services.identities.attachUniversalAuth(SYSTEM, victim.id);
      const { clientSecret } = await svc.services.identities.createClientSecret(SYSTEM, victim.id);
      for (let i = 0; i < 3; i++) {
        isError(t, await attempt({ clientId: ua.clientId, clientSecret: 'f'.repeat(64) }), 401, 'UnauthorizedError', 'Invalid credentials');
      }
      const locked = await attempt({ clientId: ua.clientId, clientSecret });
      isError(t, locked, 429, 'TooManyRequests');
      t.ok(Number(locked.headers.get('retry-after')) > 0, 'Retry-After says when');
    });

    t.test('a revoked client secret: its tokens stop working and it cannot log in', async (t) => {
      const fresh = await login(svc.url, seeded);
      const before = await list(ESO_LIST_QUERY, fresh);
      t.equal(before.status, 200);
      const [cs] = await svc.services.store.identities.usableClientSecrets(seeded.identityId);
      await svc.services.identities.revokeClientSecret(SYSTEM, seeded.identityId, cs!.id);
      isError(t, await list(ESO_LIST_QUERY, fresh), 401, 'TokenError');
      isError(
        t,
        await request(`${svc.url}/api/v1/auth/universal-auth/login`, { method: 'POST', json: seeded }),
        401, 'UnauthorizedError', 'Invalid credentials',
      );
    });

    t.test('unknown route: 404 JSON', async (t) => {
      isError(t, await request(`${svc.url}/api/v9/nothing`), 404, 'NotFound');
    });
  });
}
