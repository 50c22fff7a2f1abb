// The seed's first-time setup sequence over HTTP alone, then the operator's read:
// signup, project homelab, the 14 inventory secrets under prod /, the machine
// identity homelab-eso with Universal Auth, membership as member, login and read.
import t from 'tap';
import { ADMIN } from '../helpers/admin.js';
import { ESO_LIST_QUERY, request } from '../helpers/http.js';
import { BACKENDS, INVENTORY, startTestService, testEnv } from '../helpers/service.js';

for (const backend of BACKENDS) {
  t.test(`first-time setup over HTTP (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend));
    const api = (path: string, init: Parameters<typeof request>[1] = {}) => request(`${svc.url}${path}`, init);

    // 1. not set up → the superadmin registers (once)
    t.equal((await api('/api/v1/admin/config')).body.config.initialized, false);
    const signup = await api('/api/v1/admin/signup', { method: 'POST', json: ADMIN });
    t.equal(signup.status, 200);
    const token = signup.body.token as string;
    t.equal((await api('/api/v1/admin/config')).body.config.initialized, true);
    const second = await api('/api/v1/admin/signup', { method: 'POST', json: { ...ADMIN, email: 'x@example.test' } });
    t.equal(second.status, 400);
    t.equal(second.body.message, 'Admin account has already been set up');

    // 2. project homelab: slug derived from the name; dev, staging and prod exist
    const created = await api('/api/v1/projects', { method: 'POST', token, json: { projectName: 'homelab' } });
    t.equal(created.status, 200);
    const project = created.body.project;
    t.equal(project.slug, 'homelab');
    t.same(project.environments.map((e: { slug: string }) => e.slug), ['dev', 'staging', 'prod']);

    // 3. the 14 inventory secrets under prod, path /
    const batch = await api('/api/v3/secrets/batch/raw', {
      method: 'POST',
      token,
      json: {
        projectSlug: 'homelab',
        environment: 'prod',
        secretPath: '/',
        secrets: Object.entries(INVENTORY).map(([secretKey, secretValue]) => ({ secretKey, secretValue })),
      },
    });
    t.equal(batch.status, 200);
    t.equal(batch.body.secrets.length, 14);

    // 4. machine identity homelab-eso with Universal Auth; the client secret is shown once
    const identity = await api('/api/v1/identities', { method: 'POST', token, json: { name: 'homelab-eso' } });
    t.equal(identity.status, 200);
    const identityId = identity.body.identity.id as string;
    const ua = await api(`/api/v1/auth/universal-auth/identities/${identityId}`, { method: 'POST', token, json: {} });
    t.equal(ua.status, 200);
    const clientId = ua.body.identityUniversalAuth.clientId as string;
    const cs = await api(`/api/v1/auth/universal-auth/identities/${identityId}/client-secrets`, { method: 'POST', token, json: { description: 'eso' } });
    t.equal(cs.status, 200);
    const clientSecret = cs.body.clientSecret as string;
    t.match(clientSecret, /^[0-9a-f]{64}$/);
    const listed = await api(`/api/v1/auth/universal-auth/identities/${identityId}/client-secrets`, { token });
    t.equal(listed.status, 200);
    t.notMatch(JSON.stringify(listed.body), clientSecret, 'never shown again');

    // before membership: the identity is refused, the project answered as a missing one (404)
    const early = await api('/api/v1/auth/universal-auth/login', { method: 'POST', json: { clientId, clientSecret } });
    t.equal(early.status, 200);
    t.equal((await api(`/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { token: early.body.accessToken })).status, 404);

    // 5. add homelab-eso to the project as member
    const member = await api(`/api/v1/projects/${project.id}/memberships/identities/${identityId}`, {
      method: 'POST',
      token,
      json: { role: 'member' },
    });
    t.equal(member.status, 200);

    // 6. the operator: login, read, revoke
    const login = await api('/api/v1/auth/universal-auth/login', { method: 'POST', json: { clientId, clientSecret } });
    t.equal(login.status, 200);
    const read = await api(`/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { token: login.body.accessToken });
    t.equal(read.status, 200);
    t.same(Object.fromEntries(read.body.secrets.map((s: { secretKey: string; secretValue: string }) => [s.secretKey, s.secretValue])), INVENTORY);
    t.equal((await api('/api/v1/auth/token/revoke', { method: 'POST', json: { accessToken: login.body.accessToken } })).status, 200);
    t.equal((await api(`/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { token: login.body.accessToken })).status, 401);
  });
}
