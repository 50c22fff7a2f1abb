// The write pipeline's guard: every state-changing route, driven once over HTTP on
// replica A of two replicas sharing PostgreSQL and Redis.
//
// For each route:
//   1. with the audit trail's head anchor removed, the call fails and NOTHING changed in
//      the database (the change and its audit entry are one transaction);
//   2. with the anchor back, the call succeeds and appended exactly the audit events
//      the route is declared to write, all in one transaction (one xmin);
//   3. replica B, whose caches were warmed before the call, sees the change on its very
//      next request (the invalidation was published, and applied, after the commit).
//
// The cases are checked against the service's own route table: a new state-changing
// route without a case here fails this test.
import t from 'tap';
import { startService, type RunningService } from '../../../server/app.js';
import { parseConfig } from '../../../server/config.js';
import type { Sql } from '../../../storage/db.js';
import { ADMIN } from '../../helpers/admin.js';
import { request, type JsonResponse } from '../../helpers/http.js';
import { startIssuer } from '../../helpers/issuer.js';
import { saUsername, startKubeApi } from '../../helpers/kubeApiServer.js';
import { quietLog, testEnv } from '../../helpers/service.js';
import { Receiver } from '../../helpers/webhookReceiver.js';

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

interface Replica {
  url: string;
  call(method: Method, path: string, token?: string, json?: unknown): Promise<JsonResponse>;
}

function replica(running: RunningService): Replica {
  const url = `http://127.0.0.1:${running.port}`;
  return { url, call: (method, path, token, json) => request(`${url}${path}`, { method, token, json }) };
}

/** One state-changing route: how to set it up, call it, and see its effect elsewhere. */
interface Case {
  route: `${Method} ${string}`;
  events: string[];
  /** Creates what the call needs; returns what the call and the check use. */
  prepare(): Promise<Record<string, string>>;
  call(a: Replica, ctx: Record<string, string>): Promise<JsonResponse>;
  /** Reads on B: called before (warming its caches) and after; `changed` must hold of the pair. */
  observe(b: Replica, ctx: Record<string, string>, res?: JsonResponse): Promise<unknown>;
  changed(before: any, after: any): boolean;
}

t.test('every state-changing route goes through the write pipeline', async (t) => {
  // Webhook cases deliver their test event to a receiver on 127.0.0.1.
  const env = await testEnv(t, 'postgres+redis', { WEBHOOK_ALLOW_PRIVATE_RANGES: 'true' });
  const A = await startService(parseConfig(env), quietLog);
  t.teardown(() => A.close());
  const B = await startService(parseConfig(env), quietLog);
  t.teardown(() => B.close());
  const a = replica(A);
  const b = replica(B);
  // Signs the identity tokens of the JWT / OIDC auth cases (a real local issuer).
  const issuer = await startIssuer(t);
  // Reviews the service-account tokens of the Kubernetes Auth cases (a fake API server over TLS).
  const kube = await startKubeApi(t);
  kube.tokens.set('reviewer', { username: saUsername('kube-system', 'reviewer'), audiences: [], canReview: true });
  kube.tokens.set('workload', { username: saUsername('apps', 'eso'), audiences: [] });
  const receiver = await Receiver.start(t);
  const sql: Sql = A.services.store.sql;
  let admin = '';
  let counter = 0;
  const fresh = (prefix: string) => `${prefix}-${++counter}`;

  // -- helpers that set up state through A's API ----------------------------------------
  const ok = async (r: Promise<JsonResponse>, what: string) => {
    const res = await r;
    if (res.status < 200 || res.status > 299) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const project = async () => {
    const slug = fresh('proj');
    const p = (await ok(a.call('POST', '/api/v1/projects', admin, { projectName: slug }), 'project')).project;
    return { projectId: p.id as string, slug, prodId: p.environments.find((e: any) => e.slug === 'prod').id as string };
  };
  const secret = (slug: string, key: string, value: string, path = '/') =>
    ok(a.call('POST', `/api/v3/secrets/raw/${key}`, admin, { projectSlug: slug, environment: 'prod', secretPath: path, secretValue: value }), 'secret');
  const identity = async (projectId?: string, role = 'member') => {
    const id = (await ok(a.call('POST', '/api/v1/identities', admin, { name: fresh('machine') }), 'identity')).identity.id as string;
    const ua = (await ok(a.call('POST', `/api/v1/auth/universal-auth/identities/${id}`, admin, {}), 'ua')).identityUniversalAuth;
    const cs = await ok(a.call('POST', `/api/v1/auth/universal-auth/identities/${id}/client-secrets`, admin, {}), 'client secret');
    if (projectId) await ok(a.call('POST', `/api/v1/projects/${projectId}/memberships/identities/${id}`, admin, { role }), 'membership');
    return { identityId: id, clientId: ua.clientId as string, clientSecret: cs.clientSecret as string, clientSecretId: cs.clientSecretData.id as string };
  };
  const machineLogin = async (clientId: string, clientSecret: string) =>
    (await ok(a.call('POST', '/api/v1/auth/universal-auth/login', undefined, { clientId, clientSecret }), 'machine login')).accessToken as string;
  const person = async () => {
    const email = `${fresh('person')}@example.test`;
    const password = 'a person passphrase 123';
    const user = (await ok(a.call('POST', '/api/v1/users', admin, { email, password, firstName: 'Pat' }), 'user')).user;
    const token = (await ok(a.call('POST', '/api/v3/auth/login', undefined, { email, password }), 'login')).token as string;
    return { userId: user.id as string, email, password, token };
  };
  // JWT / OIDC auth: an identity with `method` attached (keys from the local issuer), a member of the project.
  const tokenAuthBody = (method: string) => ({
    ...(method === 'jwt-auth' ? { configurationType: 'jwks', jwksUrl: issuer.jwksUrl, boundIssuer: issuer.url } : { oidcDiscoveryUrl: issuer.url }),
    boundSubject: 'system:serviceaccount:external-secrets:*',
  });
  const tokenIdentity = async (method: string, projectId: string) => {
    const id = (await ok(a.call('POST', '/api/v1/identities', admin, { name: fresh('workload') }), 'identity')).identity.id as string;
    await ok(a.call('POST', `/api/v1/projects/${projectId}/memberships/identities/${id}`, admin, { role: 'member' }), 'membership');
    await ok(a.call('POST', `/api/v1/auth/${method}/identities/${id}`, admin, tokenAuthBody(method)), method);
    return id;
  };
  const tokenLogin = async (method: string, identityId: string) =>
    (await ok(a.call('POST', `/api/v1/auth/${method}/login`, undefined, { identityId, jwt: await issuer.sign() }), `${method} login`)).accessToken as string;
  const list = (r: Replica, slug: string, token: string, path = '/') =>
    r.call('GET', `/api/v3/secrets/raw?workspaceSlug=${slug}&environment=prod&secretPath=${encodeURIComponent(path)}`, token);
  const values = async (r: Replica, slug: string, path = '/') => {
    const res = await list(r, slug, admin, path);
    if (res.status !== 200) return res.status;
    return Object.fromEntries(res.body.secrets.map((s: any) => [s.secretKey, s.secretValue]));
  };
  const status = async (p: Promise<JsonResponse>) => (await p).status;
  const differ = (x: unknown, y: unknown) => JSON.stringify(x) !== JSON.stringify(y);
  const becomes = (from: unknown, to: unknown) => (x: unknown, y: unknown) => !differ(x, from) && !differ(y, to);

  const cases: Case[] = [
    {
      route: 'POST /api/v1/admin/signup',
      events: ['admin-signup'],
      prepare: async () => ({}),
      call: (r) => r.call('POST', '/api/v1/admin/signup', undefined, ADMIN),
      observe: async (r) => (await r.call('GET', '/api/v1/admin/config')).body.config.initialized,
      changed: becomes(false, true),
    },
    {
      route: 'POST /api/v3/auth/login',
      events: ['login-user'],
      prepare: async () => ({}),
      call: (r) => r.call('POST', '/api/v3/auth/login', undefined, { email: ADMIN.email, password: ADMIN.password }),
      observe: async (r, _c, res) => (res ? status(r.call('GET', '/api/v1/users/me', res.body.token)) : 401),
      changed: becomes(401, 200),
    },
    {
      route: 'POST /api/v1/auth/logout',
      events: ['logout-user'],
      prepare: async () => ({ token: (await person()).token }),
      call: (r, c) => r.call('POST', '/api/v1/auth/logout', c.token),
      observe: (r, c) => status(r.call('GET', '/api/v1/users/me', c.token)),
      changed: becomes(200, 401),
    },
    {
      route: 'POST /api/v1/users',
      events: ['create-user'],
      prepare: async () => ({ email: `${fresh('new')}@example.test` }),
      call: (r, c) => r.call('POST', '/api/v1/users', admin, { email: c.email, password: 'a long enough passphrase', firstName: 'New' }),
      observe: async (r, c) => (await r.call('GET', '/api/v1/users', admin)).body.users.some((u: any) => u.email === c.email),
      changed: becomes(false, true),
    },
    {
      route: 'POST /api/v1/users/me/password',
      events: ['change-password'],
      // A second session of the same person (another browser) ends on B at once.
      prepare: async () => {
        const p = await person();
        const other = (await ok(a.call('POST', '/api/v3/auth/login', undefined, { email: p.email, password: p.password }), 'login')).token as string;
        return { ...p, other };
      },
      call: (r, c) => r.call('POST', '/api/v1/users/me/password', c.token, { oldPassword: c.password, newPassword: 'the new passphrase 456' }),
      observe: async (r, c, res) => [
        await status(r.call('GET', '/api/v1/users/me', c.other)),
        res ? await status(r.call('GET', '/api/v1/users/me', res.body.token)) : 'no new session',
      ],
      changed: becomes([200, 'no new session'], [401, 200]),
    },
    {
      route: 'POST /api/v1/users/:userId/password',
      events: ['reset-user-password'],
      prepare: async () => person(),
      call: (r, c) => r.call('POST', `/api/v1/users/${c.userId}/password`, admin, { newPassword: 'reset by the admin 789' }),
      observe: (r, c) => status(r.call('GET', '/api/v1/users/me', c.token)),
      changed: becomes(200, 401),
    },
    {
      route: 'POST /api/v1/users/:userId/disable',
      events: ['disable-user'],
      prepare: async () => person(),
      call: (r, c) => r.call('POST', `/api/v1/users/${c.userId}/disable`, admin),
      observe: async (r, c) => [
        await status(r.call('GET', '/api/v1/users/me', c.token)),
        (await r.call('GET', '/api/v1/users', admin)).body.users.find((u: any) => u.id === c.userId).disabled,
      ],
      changed: becomes([200, false], [401, true]),
    },
    {
      route: 'POST /api/v1/users/:userId/enable',
      events: ['enable-user'],
      prepare: async () => {
        const p = await person();
        await ok(a.call('POST', `/api/v1/users/${p.userId}/disable`, admin), 'disable');
        return p;
      },
      call: (r, c) => r.call('POST', `/api/v1/users/${c.userId}/enable`, admin),
      observe: async (r, c) => (await r.call('GET', '/api/v1/users', admin)).body.users.find((u: any) => u.id === c.userId).disabled,
      changed: becomes(true, false),
    },
    {
      route: 'DELETE /api/v1/users/:userId',
      events: ['delete-user'],
      prepare: async () => person(),
      call: (r, c) => r.call('DELETE', `/api/v1/users/${c.userId}`, admin),
      observe: async (r, c) => [
        await status(r.call('GET', '/api/v1/users/me', c.token)),
        (await r.call('GET', '/api/v1/users', admin)).body.users.some((u: any) => u.id === c.userId),
      ],
      changed: becomes([200, true], [401, false]),
    },
    {
      route: 'POST /api/v1/auth/universal-auth/login',
      events: ['login-identity-universal-auth'],
      prepare: async () => {
        const p = await project();
        await secret(p.slug, 'K', 'v');
        return { ...p, ...(await identity(p.projectId)) };
      },
      call: (r, c) => r.call('POST', '/api/v1/auth/universal-auth/login', undefined, { clientId: c.clientId, clientSecret: c.clientSecret }),
      observe: async (r, c, res) => (res ? status(list(r, c.slug!, res.body.accessToken)) : 401),
      changed: becomes(401, 200),
    },
    {
      route: 'POST /api/v1/auth/token/revoke',
      events: ['revoke-identity-access-token'],
      prepare: async () => {
        const p = await project();
        const m = await identity(p.projectId);
        return { ...p, token: await machineLogin(m.clientId, m.clientSecret) };
      },
      call: (r, c) => r.call('POST', '/api/v1/auth/token/revoke', undefined, { accessToken: c.token }),
      observe: (r, c) => status(list(r, c.slug!, c.token!)),
      changed: becomes(200, 401),
    },
    {
      route: 'POST /api/v1/auth/token/renew',
      events: ['renew-identity-access-token'],
      prepare: async () => {
        const p = await project();
        const m = await identity(p.projectId);
        return { ...p, token: await machineLogin(m.clientId, m.clientSecret) };
      },
      call: (r, c) => r.call('POST', '/api/v1/auth/token/renew', undefined, { accessToken: c.token }),
      // The renewed token (a new JWT for the same token row) works on B at once.
      observe: async (r, c, res) => (res ? status(list(r, c.slug!, res.body.accessToken)) : 'not renewed'),
      changed: becomes('not renewed', 200),
    },
    {
      route: 'POST /api/v1/identities',
      events: ['create-identity'],
      prepare: async () => ({ name: fresh('created') }),
      call: (r, c) => r.call('POST', '/api/v1/identities', admin, { name: c.name }),
      observe: async (r, c) => (await r.call('GET', '/api/v1/identities', admin)).body.identities.some((i: any) => i.identity.name === c.name),
      changed: becomes(false, true),
    },
    {
      route: 'PATCH /api/v1/identities/:identityId',
      events: ['update-identity'],
      prepare: async () => ({ identityId: (await ok(a.call('POST', '/api/v1/identities', admin, { name: fresh('before') }), 'identity')).identity.id, next: fresh('after') }),
      call: (r, c) => r.call('PATCH', `/api/v1/identities/${c.identityId}`, admin, { identityId: c.identityId, name: c.next, hasDeleteProtection: false, role: 'no-access', metadata: [] }),
      observe: async (r, c) => (await r.call('GET', `/api/v1/identities/${c.identityId}`, admin)).body.identity.identity.name === c.next,
      changed: becomes(false, true),
    },
    {
      route: 'DELETE /api/v1/identities/:identityId',
      events: ['delete-identity'],
      prepare: async () => {
        const p = await project();
        const m = await identity(p.projectId);
        return { ...p, ...m, token: await machineLogin(m.clientId, m.clientSecret) };
      },
      call: (r, c) => r.call('DELETE', `/api/v1/identities/${c.identityId}`, admin),
      observe: async (r, c) => [await status(list(r, c.slug!, c.token!)), await status(r.call('GET', `/api/v1/identities/${c.identityId}`, admin))],
      changed: becomes([200, 200], [401, 404]),
    },
    {
      route: 'POST /api/v1/auth/universal-auth/identities/:identityId',
      events: ['add-identity-universal-auth'],
      prepare: async () => ({ identityId: (await ok(a.call('POST', '/api/v1/identities', admin, { name: fresh('bare') }), 'identity')).identity.id }),
      call: (r, c) => r.call('POST', `/api/v1/auth/universal-auth/identities/${c.identityId}`, admin, { accessTokenTTL: 600 }),
      observe: (r, c) => status(r.call('GET', `/api/v1/auth/universal-auth/identities/${c.identityId}`, admin)),
      changed: becomes(404, 200),
    },
    {
      // The access-token trusted IPs apply at once, on the other replica too (its cached
      // token state is dropped).
      route: 'PATCH /api/v1/auth/universal-auth/identities/:identityId',
      events: ['update-identity-universal-auth'],
      prepare: async () => {
        const p = await project();
        const m = await identity(p.projectId);
        return { ...p, ...m, token: await machineLogin(m.clientId, m.clientSecret) };
      },
      call: (r, c) =>
        r.call('PATCH', `/api/v1/auth/universal-auth/identities/${c.identityId}`, admin, { accessTokenTrustedIps: [{ ipAddress: '203.0.113.0/24' }] }),
      observe: (r, c) => status(list(r, c.slug!, c.token!)),
      changed: becomes(200, 403),
    },
    {
      route: 'POST /api/v1/auth/universal-auth/identities/:identityId/client-secrets',
      events: ['create-identity-universal-auth-client-secret'],
      prepare: async () => {
        const m = await identity();
        return { identityId: m.identityId, clientId: m.clientId };
      },
      call: (r, c) => r.call('POST', `/api/v1/auth/universal-auth/identities/${c.identityId}/client-secrets`, admin, { description: 'second' }),
      observe: async (r, c, res) =>
        res ? status(r.call('POST', '/api/v1/auth/universal-auth/login', undefined, { clientId: c.clientId, clientSecret: res.body.clientSecret })) : 401,
      changed: becomes(401, 200),
    },
    {
      route: 'POST /api/v1/auth/universal-auth/identities/:identityId/client-secrets/:clientSecretId/revoke',
      events: ['revoke-identity-universal-auth-client-secret'],
      prepare: async () => {
        const p = await project();
        const m = await identity(p.projectId);
        return { ...p, ...m, token: await machineLogin(m.clientId, m.clientSecret) };
      },
      call: (r, c) => r.call('POST', `/api/v1/auth/universal-auth/identities/${c.identityId}/client-secrets/${c.clientSecretId}/revoke`, admin),
      observe: (r, c) => status(list(r, c.slug!, c.token!)),
      changed: becomes(200, 401),
    },
    ...['jwt-auth', 'oidc-auth'].flatMap((method): Case[] => {
      const cfg = `/api/v1/auth/${method}/identities`;
      const withToken = async () => {
        const p = await project();
        const identityId = await tokenIdentity(method, p.projectId);
        return { ...p, identityId, token: await tokenLogin(method, identityId) };
      };
      return [
        {
          route: `POST /api/v1/auth/${method}/login`,
          events: [`login-identity-${method}`],
          prepare: async () => {
            const p = await project();
            await secret(p.slug, 'K', 'v');
            return { ...p, identityId: await tokenIdentity(method, p.projectId), jwt: await issuer.sign() };
          },
          call: (r, c) => r.call('POST', `/api/v1/auth/${method}/login`, undefined, { identityId: c.identityId, jwt: c.jwt }),
          observe: async (r, c, res) => (res ? status(list(r, c.slug!, res.body.accessToken)) : 401),
          changed: becomes(401, 200),
        },
        {
          route: `POST ${cfg}/:identityId`,
          events: [`add-identity-${method}`],
          prepare: async () => ({ identityId: (await ok(a.call('POST', '/api/v1/identities', admin, { name: fresh('bare') }), 'identity')).identity.id }),
          call: (r, c) => r.call('POST', `${cfg}/${c.identityId}`, admin, tokenAuthBody(method)),
          observe: (r, c) => status(r.call('GET', `${cfg}/${c.identityId}`, admin)),
          changed: becomes(404, 200),
        },
        {
          // The access-token trusted IPs apply at once, on the other replica too.
          route: `PATCH ${cfg}/:identityId`,
          events: [`update-identity-${method}`],
          prepare: withToken,
          call: (r, c) => r.call('PATCH', `${cfg}/${c.identityId}`, admin, { accessTokenTrustedIps: [{ ipAddress: '203.0.113.0/24' }] }),
          observe: (r, c) => status(list(r, c.slug!, c.token!)),
          changed: becomes(200, 403),
        },
        {
          // The tokens the method issued die with it, on the other replica too.
          route: `DELETE ${cfg}/:identityId`,
          events: [`revoke-identity-${method}`],
          prepare: withToken,
          call: (r, c) => r.call('DELETE', `${cfg}/${c.identityId}`, admin),
          observe: (r, c) => status(list(r, c.slug!, c.token!)),
          changed: becomes(200, 401),
        },
      ];
    }),
    ...((): Case[] => {
      const cfg = '/api/v1/auth/kubernetes-auth/identities';
      const k8sBody = () => ({ kubernetesHost: kube.url, caCert: kube.ca, tokenReviewerJwt: 'reviewer', allowedNamespaces: 'apps' });
      const k8sIdentity = async (projectId: string) => {
        const id = (await ok(a.call('POST', '/api/v1/identities', admin, { name: fresh('pod') }), 'identity')).identity.id as string;
        await ok(a.call('POST', `/api/v1/projects/${projectId}/memberships/identities/${id}`, admin, { role: 'member' }), 'membership');
        await ok(a.call('POST', `${cfg}/${id}`, admin, k8sBody()), 'kubernetes-auth');
        return id;
      };
      const k8sLogin = async (identityId: string) =>
        (await ok(a.call('POST', '/api/v1/auth/kubernetes-auth/login', undefined, { identityId, jwt: 'workload' }), 'kubernetes login')).accessToken as string;
      const withToken = async () => {
        const p = await project();
        const identityId = await k8sIdentity(p.projectId);
        return { ...p, identityId, token: await k8sLogin(identityId) };
      };
      return [
        {
          route: 'POST /api/v1/auth/kubernetes-auth/login',
          events: ['login-identity-kubernetes-auth'],
          prepare: async () => {
            const p = await project();
            return { ...p, identityId: await k8sIdentity(p.projectId) };
          },
          call: (r, c) => r.call('POST', '/api/v1/auth/kubernetes-auth/login', undefined, { identityId: c.identityId, jwt: 'workload' }),
          observe: async (r, c, res) => (res ? status(list(r, c.slug!, res.body.accessToken)) : 401),
          changed: becomes(401, 200),
        },
        {
          route: `POST ${cfg}/:identityId`,
          events: ['add-identity-kubernetes-auth'],
          prepare: async () => ({ identityId: (await ok(a.call('POST', '/api/v1/identities', admin, { name: fresh('bare') }), 'identity')).identity.id }),
          call: (r, c) => r.call('POST', `${cfg}/${c.identityId}`, admin, k8sBody()),
          observe: (r, c) => status(r.call('GET', `${cfg}/${c.identityId}`, admin)),
          changed: becomes(404, 200),
        },
        {
          route: `PATCH ${cfg}/:identityId`,
          events: ['update-identity-kubernetes-auth'],
          prepare: withToken,
          call: (r, c) => r.call('PATCH', `${cfg}/${c.identityId}`, admin, { accessTokenTrustedIps: [{ ipAddress: '203.0.113.0/24' }] }),
          observe: (r, c) => status(list(r, c.slug!, c.token!)),
          changed: becomes(200, 403),
        },
        {
          route: `DELETE ${cfg}/:identityId`,
          events: ['revoke-identity-kubernetes-auth'],
          prepare: withToken,
          call: (r, c) => r.call('DELETE', `${cfg}/${c.identityId}`, admin),
          observe: (r, c) => status(list(r, c.slug!, c.token!)),
          changed: becomes(200, 401),
        },
      ];
    })(),
    ...((): Case[] => {
      const cfg = '/api/v1/auth/token-auth/identities';
      const tokenAuthIdentity = async (projectId?: string) => {
        const id = (await ok(a.call('POST', '/api/v1/identities', admin, { name: fresh('minted') }), 'identity')).identity.id as string;
        if (projectId) await ok(a.call('POST', `/api/v1/projects/${projectId}/memberships/identities/${id}`, admin, { role: 'member' }), 'membership');
        await ok(a.call('POST', `${cfg}/${id}`, admin, {}), 'token-auth');
        return id;
      };
      const withToken = async () => {
        const p = await project();
        const identityId = await tokenAuthIdentity(p.projectId);
        const minted = await ok(a.call('POST', `${cfg}/${identityId}/tokens`, admin, { name: 'first' }), 'mint');
        return { ...p, identityId, token: minted.accessToken as string, tokenId: minted.tokenData.id as string };
      };
      return [
        {
          route: `POST ${cfg}/:identityId`,
          events: ['add-identity-token-auth'],
          prepare: async () => ({ identityId: (await ok(a.call('POST', '/api/v1/identities', admin, { name: fresh('bare') }), 'identity')).identity.id }),
          call: (r, c) => r.call('POST', `${cfg}/${c.identityId}`, admin, { accessTokenTTL: 600 }),
          observe: (r, c) => status(r.call('GET', `${cfg}/${c.identityId}`, admin)),
          changed: becomes(404, 200),
        },
        {
          route: `PATCH ${cfg}/:identityId`,
          events: ['update-identity-token-auth'],
          prepare: withToken,
          call: (r, c) => r.call('PATCH', `${cfg}/${c.identityId}`, admin, { accessTokenTrustedIps: [{ ipAddress: '203.0.113.0/24' }] }),
          observe: (r, c) => status(list(r, c.slug!, c.token!)),
          changed: becomes(200, 403),
        },
        {
          route: `DELETE ${cfg}/:identityId`,
          events: ['revoke-identity-token-auth'],
          prepare: withToken,
          call: (r, c) => r.call('DELETE', `${cfg}/${c.identityId}`, admin),
          observe: (r, c) => status(list(r, c.slug!, c.token!)),
          changed: becomes(200, 401),
        },
        {
          route: `POST ${cfg}/:identityId/tokens`,
          events: ['create-token-identity-token-auth'],
          prepare: async () => {
            const p = await project();
            return { ...p, identityId: await tokenAuthIdentity(p.projectId) };
          },
          call: (r, c) => r.call('POST', `${cfg}/${c.identityId}/tokens`, admin, { name: 'second' }),
          observe: async (r, c, res) => (res ? status(list(r, c.slug!, res.body.accessToken)) : 401),
          changed: becomes(401, 200),
        },
        {
          route: 'PATCH /api/v1/auth/token-auth/tokens/:tokenId',
          events: ['update-token-identity-token-auth'],
          prepare: withToken,
          call: (r, c) => r.call('PATCH', `/api/v1/auth/token-auth/tokens/${c.tokenId}`, admin, { name: 'renamed' }),
          observe: async (r, c) => (await r.call('GET', `/api/v1/auth/token-auth/tokens/${c.tokenId}`, admin)).body.token.name,
          changed: becomes('first', 'renamed'),
        },
        {
          route: 'POST /api/v1/auth/token-auth/tokens/:tokenId/revoke',
          events: ['revoke-token-identity-token-auth'],
          prepare: withToken,
          call: (r, c) => r.call('POST', `/api/v1/auth/token-auth/tokens/${c.tokenId}/revoke`, admin),
          observe: (r, c) => status(list(r, c.slug!, c.token!)),
          changed: becomes(200, 401),
        },
      ];
    })(),
    {
      route: 'POST /api/v1/projects',
      events: ['create-project'],
      prepare: async () => ({ slug: fresh('newproj') }),
      call: (r, c) => r.call('POST', '/api/v1/projects', admin, { projectName: c.slug }),
      observe: (r, c) => status(r.call('GET', `/api/v1/projects/slug/${c.slug}`, admin)),
      changed: becomes(404, 200),
    },
    {
      route: 'POST /api/v2/workspace',
      events: ['create-project'],
      prepare: async () => ({ slug: fresh('v2proj') }),
      call: (r, c) => r.call('POST', '/api/v2/workspace', admin, { projectName: c.slug, slug: c.slug, organizationSlug: 'any', shouldCreateDefaultEnvs: true, hasDeleteProtection: false }),
      observe: (r, c) => status(r.call('GET', `/api/v2/workspace/${c.slug}`, admin)),
      changed: becomes(404, 200),
    },
    {
      route: 'POST /api/v2/workspace/:projectId/memberships',
      events: ['add-workspace-member', 'add-workspace-member'],
      prepare: async () => {
        const p = await project();
        await secret(p.slug, 'K', 'v');
        const u = await person();
        const v = await person();
        return { ...p, email: u.email, other: v.email, token: u.token };
      },
      call: (r, c) => r.call('POST', `/api/v2/workspace/${c.projectId}/memberships`, admin, { projectId: c.projectId, emails: [c.email], usernames: [c.other], roleSlugs: ['viewer'] }),
      // Not a member yet: the project answers as a missing one.
      observe: (r, c) => status(list(r, c.slug!, c.token!)),
      changed: becomes(404, 200),
    },
    {
      route: 'PATCH /api/v1/projects/:projectId',
      events: ['update-project'],
      prepare: async () => ({ ...(await project()), next: fresh('renamed') }),
      call: (r, c) => r.call('PATCH', `/api/v1/projects/${c.projectId}`, admin, { slug: c.next }),
      observe: async (r, c) => [await status(r.call('GET', `/api/v1/projects/slug/${c.slug}`, admin)), await status(r.call('GET', `/api/v1/projects/slug/${c.next}`, admin))],
      changed: becomes([200, 404], [404, 200]),
    },
    {
      route: 'DELETE /api/v1/projects/:projectId',
      events: ['delete-secret', 'remove-workspace-member', 'delete-project'],
      prepare: async () => {
        const p = await project();
        await secret(p.slug, 'GONE', 'with the project');
        return p;
      },
      call: (r, c) => r.call('DELETE', `/api/v1/projects/${c.projectId}?force=true`, admin),
      observe: (r, c) => values(r, c.slug!),
      changed: becomes({ GONE: 'with the project' }, 404),
    },
    {
      route: 'POST /api/v1/projects/:projectId/environments',
      events: ['create-environment'],
      prepare: project,
      call: (r, c) => r.call('POST', `/api/v1/projects/${c.projectId}/environments`, admin, { name: 'QA', slug: 'qa' }),
      observe: async (r, c) => (await r.call('GET', `/api/v1/projects/slug/${c.slug}`, admin)).body.environments.map((e: any) => e.slug),
      changed: becomes(['dev', 'staging', 'prod'], ['dev', 'staging', 'prod', 'qa']),
    },
    {
      route: 'POST /api/v1/workspace/:projectId/environments',
      events: ['create-environment'],
      prepare: project,
      call: (r, c) => r.call('POST', `/api/v1/workspace/${c.projectId}/environments`, admin, { name: 'QA', slug: 'qa', projectId: c.projectId }),
      observe: async (r, c) => (await r.call('GET', `/api/v1/projects/slug/${c.slug}`, admin)).body.environments.map((e: any) => e.slug),
      changed: becomes(['dev', 'staging', 'prod'], ['dev', 'staging', 'prod', 'qa']),
    },
    {
      route: 'PATCH /api/v1/projects/:projectId/environments/:envId',
      events: ['update-environment'],
      prepare: project,
      call: (r, c) => r.call('PATCH', `/api/v1/projects/${c.projectId}/environments/${c.prodId}`, admin, { slug: 'production' }),
      observe: async (r, c) => (await r.call('GET', `/api/v1/projects/slug/${c.slug}`, admin)).body.environments.map((e: any) => e.slug),
      changed: becomes(['dev', 'staging', 'prod'], ['dev', 'staging', 'production']),
    },
    {
      route: 'DELETE /api/v1/projects/:projectId/environments/:envId',
      events: ['delete-secret', 'delete-environment'],
      prepare: async () => {
        const p = await project();
        await secret(p.slug, 'GONE', 'with the environment');
        return p;
      },
      call: (r, c) => r.call('DELETE', `/api/v1/projects/${c.projectId}/environments/${c.prodId}?force=true`, admin),
      observe: (r, c) => values(r, c.slug!),
      changed: becomes({ GONE: 'with the environment' }, 404),
    },
    ...((): Case[] => {
      // Terraform's infisical_project_identity: Infisical's v2 paths on the same handlers, a temporary role among them.
      const member = async (role: string | null) => {
        const p = await project();
        await secret(p.slug, 'K', 'v');
        const m = await identity(role ? p.projectId : undefined, role ?? undefined);
        return { ...p, memberId: m.identityId, token: await machineLogin(m.clientId, m.clientSecret) };
      };
      const path = (c: Record<string, string>) => `/api/v2/workspace/${c.projectId}/identity-memberships/${c.memberId}`;
      const reads = (r: Replica, c: Record<string, string>) => status(list(r, c.slug!, c.token!));
      const temporary = (role: string) => [{ role, isTemporary: true, temporaryMode: 'relative', temporaryRange: '1d', temporaryAccessStartTime: new Date().toISOString() }];
      return [
        {
          route: 'POST /api/v2/workspace/:projectId/identity-memberships/:identityId',
          events: ['add-identity-to-project'],
          prepare: () => member(null),
          call: (r, c) => r.call('POST', path(c), admin, { projectId: c.projectId, identityId: c.memberId, roles: temporary('viewer') }),
          observe: reads,
          changed: becomes(404, 200),
        },
        {
          route: 'PATCH /api/v2/workspace/:projectId/identity-memberships/:identityId',
          events: ['update-identity-project-membership'],
          prepare: () => member('viewer'),
          call: (r, c) => r.call('PATCH', path(c), admin, { roles: temporary('no-access') }),
          observe: reads,
          changed: becomes(200, 403),
        },
        {
          route: 'DELETE /api/v2/workspace/:projectId/identity-memberships/:identityId',
          events: ['remove-identity-from-project'],
          prepare: () => member('viewer'),
          call: (r, c) => r.call('DELETE', path(c), admin),
          observe: reads,
          changed: becomes(200, 404),
        },
      ];
    })(),
    ...(['identity', 'user'] as const).flatMap((kind): Case[] => {
      const segment = kind === 'identity' ? 'identities' : 'users';
      const events =
        kind === 'identity'
          ? ['add-identity-to-project', 'update-identity-project-membership', 'remove-identity-from-project']
          : ['add-workspace-member', 'update-user-workspace-role', 'remove-workspace-member'];
      /** A member (identity or person) of a project, and a token it reads with. */
      const member = async (role: string | null) => {
        const p = await project();
        await secret(p.slug, 'K', 'v');
        if (kind === 'identity') {
          const m = await identity(role ? p.projectId : undefined, role ?? undefined);
          return { ...p, memberId: m.identityId, token: await machineLogin(m.clientId, m.clientSecret) };
        }
        const u = await person();
        if (role) await ok(a.call('POST', `/api/v1/projects/${p.projectId}/memberships/users/${u.userId}`, admin, { role }), 'user membership');
        return { ...p, memberId: u.userId, token: u.token };
      };
      const path = (c: Record<string, string>) => `/api/v1/projects/${c.projectId}/memberships/${segment}/${c.memberId}`;
      const reads = (r: Replica, c: Record<string, string>) => status(list(r, c.slug!, c.token!));
      return [
        {
          route: `POST /api/v1/projects/:projectId/memberships/${segment}/:${kind}Id`,
          events: [events[0]!],
          prepare: () => member(null),
          call: (r, c) => r.call('POST', path(c), admin, { role: 'viewer' }),
          observe: reads,
          // Not a member yet: the project answers as a missing one.
          changed: becomes(404, 200),
        },
        {
          route: `PATCH /api/v1/projects/:projectId/memberships/${segment}/:${kind}Id`,
          events: [events[1]!],
          prepare: () => member('viewer'),
          call: (r, c) => r.call('PATCH', path(c), admin, { role: 'no-access' }),
          observe: reads,
          changed: becomes(200, 403),
        },
        {
          route: `DELETE /api/v1/projects/:projectId/memberships/${segment}/:${kind}Id`,
          events: [events[2]!],
          prepare: () => member('viewer'),
          call: (r, c) => r.call('DELETE', path(c), admin),
          observe: reads,
          changed: becomes(200, 404),
        },
      ];
    }),
    ...((): Case[] => {
      // A custom role and an identity holding it (or not yet): what the identity reads shows the role's rules.
      const rule = (env: string) => [{ subject: 'secrets', action: ['read'], conditions: { environment: env, secretPath: { $glob: '/**' } } }];
      const scoped = async (assigned: boolean) => {
        const p = await project();
        await secret(p.slug, 'K', 'v');
        const role = (await ok(a.call('POST', `/api/v1/projects/${p.projectId}/roles`, admin, { slug: fresh('role'), name: 'Reader', permissions: rule('prod') }), 'role')).role;
        const m = await identity(assigned ? p.projectId : undefined, role.slug);
        return { ...p, roleId: role.id as string, roleSlug: role.slug as string, token: await machineLogin(m.clientId, m.clientSecret) };
      };
      const reads = (r: Replica, c: Record<string, string>) => status(list(r, c.slug!, c.token!));
      return [
        {
          route: 'POST /api/v1/projects/:projectId/roles',
          events: ['create-project-role'],
          prepare: project,
          call: (r, c) => r.call('POST', `/api/v1/projects/${c.projectId}/roles`, admin, { slug: 'prod-reader', name: 'Prod reader', permissions: rule('prod') }),
          observe: async (r, c) => (await r.call('GET', `/api/v1/projects/${c.projectId}/roles`, admin)).body.roles.map((x: any) => x.slug),
          changed: becomes([], ['prod-reader']),
        },
        {
          route: 'PATCH /api/v1/projects/:projectId/roles/:roleId',
          events: ['update-project-role'],
          prepare: () => scoped(true),
          // B has the member's role (and its compiled rules) cached: the change must reach it.
          call: (r, c) => r.call('PATCH', `/api/v1/projects/${c.projectId}/roles/${c.roleId}`, admin, { permissions: rule('dev') }),
          observe: reads,
          changed: becomes(200, 403),
        },
        {
          route: 'DELETE /api/v1/projects/:projectId/roles/:roleId',
          events: ['delete-project-role'],
          prepare: () => scoped(false),
          call: (r, c) => r.call('DELETE', `/api/v1/projects/${c.projectId}/roles/${c.roleId}`, admin),
          observe: async (r, c) => (await r.call('GET', `/api/v1/projects/${c.projectId}/roles/slug/${c.roleSlug}`, admin)).status,
          changed: becomes(200, 404),
        },
      ];
    })(),
    // Infisical's SDKs call /api/v1/folders; the same routes answer under /api/v2.
    ...(['/api/v1/folders', '/api/v2/folders'] as const).flatMap((base): Case[] => [
      {
        route: `POST ${base}`,
        events: ['create-folder'],
        prepare: project,
        call: (r, c) => r.call('POST', base, admin, { projectId: c.projectId, environment: 'prod', path: '/', name: 'app' }),
        observe: (r, c) => values(r, c.slug!, '/app'),
        changed: becomes(404, {}),
      },
      {
        route: `PATCH ${base}/:folderId`,
        events: ['update-folder'],
        prepare: async () => {
          const p = await project();
          const f = (await ok(a.call('POST', base, admin, { projectId: p.projectId, environment: 'prod', path: '/', name: 'old' }), 'folder')).folder;
          await secret(p.slug, 'IN', 'folder', '/old');
          return { ...p, folderId: f.id };
        },
        call: (r, c) => r.call('PATCH', `${base}/${c.folderId}`, admin, { projectId: c.projectId, environment: 'prod', path: '/', name: 'new' }),
        observe: async (r, c) => [await values(r, c.slug!, '/old'), await values(r, c.slug!, '/new')],
        changed: becomes([{ IN: 'folder' }, 404], [404, { IN: 'folder' }]),
      },
      {
        route: `DELETE ${base}/:folderIdOrName`,
        events: ['delete-secret', 'delete-folder'],
        prepare: async () => {
          const p = await project();
          await ok(a.call('POST', base, admin, { projectId: p.projectId, environment: 'prod', path: '/', name: 'doomed' }), 'folder');
          await secret(p.slug, 'IN', 'folder', '/doomed');
          return p;
        },
        call: (r, c) => r.call('DELETE', `${base}/doomed`, admin, { projectId: c.projectId, environment: 'prod', path: '/', force: true }),
        observe: (r, c) => values(r, c.slug!, '/doomed'),
        changed: becomes({ IN: 'folder' }, 404),
      },
    ]),
    ...(['v3', 'v4'] as const).flatMap((v): Case[] => {
      const one = v === 'v3' ? '/api/v3/secrets/raw/:secretName' : '/api/v4/secrets/:secretName';
      const batch = v === 'v3' ? '/api/v3/secrets/batch/raw' : '/api/v4/secrets/batch';
      const at = (c: Record<string, string>) => (v === 'v3' ? { projectSlug: c.slug } : { projectId: c.projectId });
      const url = (name: string) => one.replace(':secretName', name);
      const withSecret = async () => {
        const p = await project();
        await secret(p.slug, 'K', 'old');
        return p;
      };
      return [
        {
          route: `POST ${one}`,
          events: ['create-secret'],
          prepare: project,
          call: (r, c) => r.call('POST', url('K'), admin, { ...at(c), environment: 'prod', secretValue: 'new' }),
          observe: (r, c) => values(r, c.slug!),
          changed: becomes({}, { K: 'new' }),
        },
        {
          route: `PATCH ${one}`,
          events: ['update-secret'],
          prepare: withSecret,
          call: (r, c) => r.call('PATCH', url('K'), admin, { ...at(c), environment: 'prod', secretValue: 'new' }),
          observe: (r, c) => values(r, c.slug!),
          changed: becomes({ K: 'old' }, { K: 'new' }),
        },
        {
          route: `DELETE ${one}`,
          events: ['delete-secret'],
          prepare: withSecret,
          call: (r, c) => r.call('DELETE', url('K'), admin, { ...at(c), environment: 'prod' }),
          observe: (r, c) => values(r, c.slug!),
          changed: becomes({ K: 'old' }, {}),
        },
        {
          route: `POST ${batch}`,
          events: ['create-secret', 'create-secret'],
          prepare: project,
          call: (r, c) =>
            r.call('POST', batch, admin, {
              ...at(c),
              environment: 'prod',
              secrets: [
                { secretKey: 'A', secretValue: '1' },
                { secretKey: 'B', secretValue: '2' },
              ],
            }),
          observe: (r, c) => values(r, c.slug!),
          changed: becomes({}, { A: '1', B: '2' }),
        },
        {
          route: `PATCH ${batch}`,
          events: ['update-secret', 'create-secret'],
          prepare: withSecret,
          call: (r, c) =>
            r.call('PATCH', batch, admin, {
              ...at(c),
              environment: 'prod',
              mode: 'upsert',
              secrets: [
                { secretKey: 'K', secretValue: 'new' },
                { secretKey: 'U', secretValue: 'up' },
              ],
            }),
          observe: (r, c) => values(r, c.slug!),
          changed: becomes({ K: 'old' }, { K: 'new', U: 'up' }),
        },
        {
          route: `DELETE ${batch}`,
          events: ['delete-secret'],
          prepare: withSecret,
          call: (r, c) => r.call('DELETE', batch, admin, { ...at(c), environment: 'prod', secrets: [{ secretKey: 'K' }] }),
          observe: (r, c) => values(r, c.slug!),
          changed: becomes({ K: 'old' }, {}),
        },
      ];
    }),
    ...((): Case[] => {
      // Secret imports: prod / of a project imports dev / (which holds SRC=dev) and staging /.
      const base = '/api/v1/secret-imports';
      const at = (c: Record<string, string>) => ({ workspaceId: c.projectId, environment: 'prod', path: '/' });
      const imported = async (r: Replica, c: Record<string, string>) => {
        const res = await r.call('GET', `/api/v3/secrets/raw?workspaceSlug=${c.slug}&environment=prod&secretPath=%2F&include_imports=true`, admin);
        return res.status === 200 ? res.body.imports.map((i: any) => [i.environment, i.secrets.map((s: any) => `${s.secretKey}=${s.secretValue}`)]) : res.status;
      };
      const withSources = async () => {
        const p = await project();
        await ok(a.call('POST', '/api/v3/secrets/raw/SRC', admin, { projectSlug: p.slug, environment: 'dev', secretValue: 'dev' }), 'dev secret');
        await ok(a.call('POST', '/api/v3/secrets/raw/SRC', admin, { projectSlug: p.slug, environment: 'staging', secretValue: 'staging' }), 'staging secret');
        return p;
      };
      const withImports = async () => {
        const p = await withSources();
        const first = (await ok(a.call('POST', base, admin, { ...at(p), import: { environment: 'dev', path: '/' } }), 'import')).secretImport.id as string;
        await ok(a.call('POST', base, admin, { ...at(p), import: { environment: 'staging', path: '/' } }), 'import');
        return { ...p, importId: first };
      };
      return [
        {
          route: `POST ${base}`,
          events: ['create-secret-import'],
          prepare: withSources,
          call: (r, c) => r.call('POST', base, admin, { ...at(c), import: { environment: 'dev', path: '/' } }),
          observe: imported,
          changed: becomes([], [['dev', ['SRC=dev']]]),
        },
        {
          route: `PATCH ${base}/:secretImportId`,
          events: ['update-secret-import'],
          prepare: withImports,
          call: (r, c) => r.call('PATCH', `${base}/${c.importId}`, admin, { ...at(c), import: { position: 2 } }),
          observe: imported,
          changed: becomes([['dev', ['SRC=dev']], ['staging', ['SRC=staging']]], [['staging', ['SRC=staging']], ['dev', ['SRC=dev']]]),
        },
        {
          route: `DELETE ${base}/:secretImportId`,
          events: ['delete-secret-import'],
          prepare: withImports,
          call: (r, c) => r.call('DELETE', `${base}/${c.importId}`, admin, at(c)),
          observe: imported,
          changed: becomes([['dev', ['SRC=dev']], ['staging', ['SRC=staging']]], [['staging', ['SRC=staging']]]),
        },
      ];
    })(),
    ...(['/api/v1/workspace/:projectId/tags', '/api/v1/projects/:projectId/tags'] as const).flatMap((pattern): Case[] => {
      const base = (c: Record<string, string>) => pattern.replace(':projectId', c.projectId!);
      /** The tag slugs secret K carries, as replica r lists it (cached there). */
      const carried = async (r: Replica, c: Record<string, string>) => {
        const res = await list(r, c.slug!, admin);
        return res.status === 200 ? res.body.secrets.find((s: any) => s.secretKey === 'K')?.tags.map((x: any) => x.slug) : res.status;
      };
      const tagged = async () => {
        const p = await project();
        const tag = (await ok(a.call('POST', `/api/v1/projects/${p.projectId}/tags`, admin, { slug: 'db' }), 'tag')).tag.id as string;
        await ok(a.call('POST', '/api/v3/secrets/raw/K', admin, { projectSlug: p.slug, environment: 'prod', secretValue: 'v', tagIds: [tag] }), 'tagged secret');
        return { ...p, tagId: tag };
      };
      return [
        {
          route: `POST ${pattern}`,
          events: ['create-tag'],
          prepare: project,
          call: (r, c) => r.call('POST', base(c), admin, { slug: 'db', color: 'red' }),
          observe: async (r, c) => (await r.call('GET', base(c), admin)).body.tags.map((x: any) => x.slug),
          changed: becomes([], ['db']),
        },
        {
          route: `PATCH ${pattern}/:tagId`,
          events: ['update-tag'],
          prepare: tagged,
          call: (r, c) => r.call('PATCH', `${base(c)}/${c.tagId}`, admin, { slug: 'database' }),
          observe: carried,
          changed: becomes(['db'], ['database']),
        },
        {
          route: `DELETE ${pattern}/:tagId`,
          events: ['delete-tag'],
          prepare: tagged,
          call: (r, c) => r.call('DELETE', `${base(c)}/${c.tagId}`, admin),
          observe: carried,
          changed: becomes(['db'], []),
        },
      ];
    }),
    ...((): Case[] => {
      const hooks = async (r: Replica, c: Record<string, string>) => {
        const res = await r.call('GET', `/api/v1/webhooks?projectId=${c.projectId}`, admin);
        return res.status === 200 ? res.body.webhooks.map((w: any) => [w.isDisabled, w.lastStatus]) : res.status;
      };
      const withHook = async () => {
        const p = await project();
        const w = (await ok(a.call('POST', '/api/v1/webhooks', admin, { projectId: p.projectId, environment: 'prod', webhookUrl: receiver.url() }), 'webhook')).webhook;
        return { ...p, webhookId: w.id as string };
      };
      return [
        {
          route: 'POST /api/v1/webhooks',
          events: ['create-webhook'],
          prepare: project,
          call: (r, c) => r.call('POST', '/api/v1/webhooks', admin, { projectId: c.projectId, environment: 'prod', webhookUrl: receiver.url(), webhookSecretKey: 'k' }),
          observe: hooks,
          changed: becomes([], [[false, null]]),
        },
        {
          route: 'PATCH /api/v1/webhooks/:webhookId',
          events: ['update-webhook'],
          prepare: withHook,
          call: (r, c) => r.call('PATCH', `/api/v1/webhooks/${c.webhookId}`, admin, { isDisabled: true }),
          observe: hooks,
          changed: becomes([[false, null]], [[true, null]]),
        },
        {
          route: 'DELETE /api/v1/webhooks/:webhookId',
          events: ['delete-webhook'],
          prepare: withHook,
          call: (r, c) => r.call('DELETE', `/api/v1/webhooks/${c.webhookId}`, admin),
          observe: hooks,
          changed: becomes([[false, null]], []),
        },
        {
          route: 'POST /api/v1/webhooks/:webhookId/test',
          events: ['test-webhook'],
          prepare: withHook,
          call: (r, c) => r.call('POST', `/api/v1/webhooks/${c.webhookId}/test`, admin),
          observe: hooks,
          changed: becomes([[false, null]], [[false, 'success']]),
        },
      ];
    })(),
    {
      route: 'POST /api/v1/secret/:secretId/secret-versions/:version/restore',
      events: ['restore-secret-version'],
      prepare: async () => {
        const p = await project();
        const id = (await secret(p.slug, 'K', 'first')).secret.id;
        await ok(a.call('PATCH', '/api/v3/secrets/raw/K', admin, { projectSlug: p.slug, environment: 'prod', secretValue: 'second' }), 'update');
        return { ...p, secretId: id };
      },
      call: (r, c) => r.call('POST', `/api/v1/secret/${c.secretId}/secret-versions/1/restore`, admin),
      observe: (r, c) => values(r, c.slug!),
      changed: becomes({ K: 'second' }, { K: 'first' }),
    },
  ];

  // -- completeness: one case per state-changing route, and no case for a route that does not exist
  // The event subscription is a POST that opens a stream and changes nothing (server/routes/v1/events.ts);
  // asking for a full walk of the audit chain starts a background read whose only row is its own keyed
  // verdict (audit_verify_runs), no change to anything a caller reads (server/domain/auditVerifier.ts).
  const READS_BY_POST = new Set(['POST /api/v1/events/subscribe/project-events', 'POST /api/v1/organization/audit-logs/verify']);
  const declared = A.routes.filter((r) => r.method !== 'GET').map((r) => `${r.method} ${r.path}`).filter((r) => !READS_BY_POST.has(r));
  const covered = cases.map((c) => c.route);
  t.same([...declared].sort(), [...new Set(covered)].sort(), 'every state-changing route has exactly one case here');

  // -- the database as a whole, for "nothing changed" ---------------------------------
  const tables = (await sql<{ name: string }[]>`select table_name as name from information_schema.tables
    where table_schema = 'public' and table_type = 'BASE TABLE' order by table_name`).map((r) => r.name);
  // Rate-limit state is written before a login is decided, on purpose (a refused login counts).
  const compared = tables.filter((name) => name !== 'login_attempts');
  t.ok(compared.includes('secrets') && compared.includes('audit_log'), 'the comparison covers the data and the trail');
  const fingerprint = async () => {
    const out: Record<string, string> = {};
    for (const name of compared) {
      const [row] = await sql.unsafe(`select md5(coalesce(string_agg(t::text, '|' order by t::text), '')) as h from "${name}" t`);
      out[name] = (row as unknown as { h: string }).h;
    }
    return out;
  };
  const lastAuditId = async () => (await sql<{ id: number }[]>`select coalesce(max(id), 0)::int as id from audit_log`)[0]!.id;

  for (const c of cases) {
    await t.test(c.route, async (t) => {
      const ctx = await c.prepare();
      const before = await c.observe(b, ctx);

      // 1. The audit entry cannot be written: the change does not happen.
      const [anchor] = await sql`select * from audit_chain_head where id = 1`;
      const untouched = await fingerprint();
      await sql`delete from audit_chain_head where id = 1`;
      let refused: JsonResponse;
      try {
        refused = await c.call(a, ctx);
      } finally {
        await sql`insert into audit_chain_head ${sql(anchor as Record<string, unknown>)}`;
      }
      t.equal(refused.status, 500, 'refused while the trail cannot be extended');
      t.equal(refused.body?.error, 'AuditTrailBroken');
      t.same(await fingerprint(), untouched, 'nothing changed in any table');

      // 2. The change and its audit entries commit together.
      const from = await lastAuditId();
      const res = await c.call(a, ctx);
      t.ok(res.status >= 200 && res.status < 300, `answered ${res.status} ${res.status >= 300 ? JSON.stringify(res.body) : ''}`);
      const entries = await sql<{ eventType: string; xmin: string }[]>`select event_type, xmin::text as xmin from audit_log where id > ${from} order by id`;
      t.same(
        entries.map((e) => e.eventType),
        c.events,
        'the declared audit events, in order',
      );
      t.equal(new Set(entries.map((e) => e.xmin)).size, 1, 'all in one transaction');

      // 3. The other replica sees it on its very next request.
      const after = await c.observe(b, ctx, res);
      t.ok(c.changed(before, after), `replica B: ${JSON.stringify(before)} -> ${JSON.stringify(after)}`);

      if (c.route === 'POST /api/v1/admin/signup') admin = res.body.token;
    });
  }
});
