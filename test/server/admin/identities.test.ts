// Machine identities and Universal Auth over HTTP: the superadmin creates, lists and
// deletes identities, attaches Universal Auth, creates (shown once), lists and revokes
// client secrets; nobody else may; bad input changes nothing.
import t from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { ESO_LIST_QUERY, request } from '../../helpers/http.js';
import { BACKENDS, login, seedHomelab, startTestService, testEnv } from '../../helpers/service.js';
import { api, isError, machine, plainUser, snapshot, superadmin } from './helpers.js';

const UA = (id: string) => `/api/v1/auth/universal-auth/identities/${id}`;
const HEX64 = /^[0-9a-f]{64}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

for (const backend of BACKENDS) {
  t.test(`identities and Universal Auth (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend));
    const admin = await superadmin(svc);
    const seeded = await seedHomelab(svc.services);
    const as = admin.token;
    const read = (token: string) => request(`${svc.url}/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { token });

    t.test('create, get, list and delete an identity', async (t) => {
      const created = await api(svc, 'POST', '/api/v1/identities', as, { name: '  ci-runner ' });
      t.equal(created.status, 200, JSON.stringify(created.body));
      const identity = created.body.identity;
      t.match(identity, { id: String, name: 'ci-runner', orgId: String, authMethods: [], createdAt: ISO, updatedAt: ISO });
      t.same(identity.authMethods, []);

      const sameOrg = await api(svc, 'POST', '/api/v1/identities', as, { name: 'in-org', organizationId: identity.orgId });
      t.equal(sameOrg.status, 200, 'the instance organization may be named');
      isError(t, await api(svc, 'POST', '/api/v1/identities', as, { name: 'x', organizationId: '00000000-0000-4000-8000-000000000000' }), 404, 'NotFound', /Organization/);

      const got = await api(svc, 'GET', `/api/v1/identities/${identity.id}`, as);
      t.equal(got.status, 200);
      t.match(got.body.identity, identity, 'the identity\'s fields, as today');
      // Terraform's read (terraform-provider-infisical model.go OrgIdentity): the organization membership wrapping the identity.
      t.same(got.body.identity.identity, identity, 'identity.identity: the identity');
      t.match(got.body.identity, { identityId: identity.id, orgId: identity.orgId, role: 'no-access', customRole: null });
      const upper = await api(svc, 'GET', `/api/v1/identities/${identity.id.toUpperCase()}`, as);
      t.equal(upper.body.identity?.id, identity.id, 'ids are case-insensitive');

      const list = await api(svc, 'GET', `/api/v1/identities?orgId=${identity.orgId}`, as);
      t.equal(list.status, 200);
      t.ok(Array.isArray(list.body.identities));
      const byName = Object.fromEntries(list.body.identities.map((e: any) => [e.identity.name, e]));
      t.match(byName['ci-runner'], { id: identity.id, orgId: identity.orgId, identity: { id: identity.id, authMethods: [] } });
      t.same(byName['homelab-eso'].identity.authMethods, ['universal-auth'], 'auth methods are listed');
      t.equal((await api(svc, 'GET', '/api/v1/identities', as)).body.identities.length, list.body.identities.length, 'orgId is optional');
      isError(t, await api(svc, 'GET', '/api/v1/identities?orgId=00000000-0000-4000-8000-000000000000', as), 404, 'NotFound');

      const deleted = await api(svc, 'DELETE', `/api/v1/identities/${sameOrg.body.identity.id}`, as);
      t.equal(deleted.status, 200);
      t.equal(deleted.body.identity.id, sameOrg.body.identity.id);
      isError(t, await api(svc, 'GET', `/api/v1/identities/${sameOrg.body.identity.id}`, as), 404, 'NotFound');
      isError(t, await api(svc, 'DELETE', `/api/v1/identities/${sameOrg.body.identity.id}`, as), 404, 'NotFound');

      const events = await svc.services.store.sql<{ eventType: string; actorId: string }[]>`select event_type, actor_id from audit_log
        where metadata->>'identityId' = ${sameOrg.body.identity.id} order by id`;
      t.same(events.map((e) => e.eventType), ['create-identity', 'delete-identity'], 'both changes are audited');
      t.ok(events.every((e) => e.actorId === admin.userId), 'as the superadmin');
    });

    t.test('the browser session needs its CSRF token to change anything', async (t) => {
      const noCsrf = await request(`${svc.url}/api/v1/identities`, { method: 'POST', headers: { cookie: admin.cookie }, json: { name: 'c' } });
      isError(t, noCsrf, 403, 'PermissionDenied', /CSRF/);
      const ok = await request(`${svc.url}/api/v1/identities`, {
        method: 'POST',
        headers: { cookie: admin.cookie, 'x-csrf-token': admin.csrfToken },
        json: { name: 'from-the-browser' },
      });
      t.equal(ok.status, 200);
      t.equal((await request(`${svc.url}/api/v1/identities`, { headers: { cookie: admin.cookie } })).status, 200, 'reads need no CSRF token');
    });

    t.test('attach Universal Auth, log in with a new client secret', async (t) => {
      const { body } = await api(svc, 'POST', '/api/v1/identities', as, { name: 'deployer' });
      const id = body.identity.id;
      const attached = await api(svc, 'POST', UA(id), as, { accessTokenTTL: 3600, accessTokenMaxTTL: 7200 });
      t.equal(attached.status, 200, JSON.stringify(attached.body));
      t.match(attached.body.identityUniversalAuth, {
        id: String, identityId: id, clientId: /^[0-9a-f-]{36}$/, accessTokenTTL: 3600, accessTokenMaxTTL: 7200,
        accessTokenNumUsesLimit: 0, createdAt: ISO, updatedAt: ISO,
      });
      const got = await api(svc, 'GET', UA(id), as);
      t.equal(got.status, 200);
      t.same(got.body.identityUniversalAuth, attached.body.identityUniversalAuth);
      isError(t, await api(svc, 'POST', UA(id), as, {}), 400, 'BadRequest', /already/);
      t.same((await api(svc, 'GET', `/api/v1/identities/${id}`, as)).body.identity.authMethods, ['universal-auth']);

      const defaults = await api(svc, 'POST', '/api/v1/identities', as, { name: 'defaults' });
      const d = await api(svc, 'POST', UA(defaults.body.identity.id), as);
      t.match(d.body.identityUniversalAuth, { accessTokenTTL: 2592000, accessTokenMaxTTL: 2592000 }, 'an empty body takes the defaults');

      const cs = await api(svc, 'POST', `${UA(id)}/client-secrets`, as, { description: 'ci', numUsesLimit: 2 });
      t.equal(cs.status, 200, JSON.stringify(cs.body));
      t.match(cs.body.clientSecret, HEX64);
      t.match(cs.body.clientSecretData, {
        id: String, identityId: id, clientSecretPrefix: cs.body.clientSecret.slice(0, 4), description: 'ci',
        ttl: 0, numUses: 0, numUsesLimit: 2, isClientSecretRevoked: false, createdAt: ISO,
      });
      const creds = { clientId: attached.body.identityUniversalAuth.clientId, clientSecret: cs.body.clientSecret };
      const r = await request(`${svc.url}/api/v1/auth/universal-auth/login`, { method: 'POST', json: creds });
      t.equal(r.status, 200);
      t.equal(r.body.expiresIn, 3600, 'the configured TTL');
      t.equal(r.body.accessTokenMaxTTL, 7200);
      await login(svc.url, creds);
      isError(
        t, await request(`${svc.url}/api/v1/auth/universal-auth/login`, { method: 'POST', json: creds }),
        401, 'UnauthorizedError', 'Invalid credentials',
      );
      const used = await api(svc, 'GET', `${UA(id)}/client-secrets/${cs.body.clientSecretData.id}`, as);
      t.match(used.body.clientSecretData, { numUses: 2, numUsesLimit: 2 }, 'uses are counted; the limit holds');
    });

    t.test('a client secret is shown once: never listed, logged, audited or stored', async (t) => {
      const { identityId } = await machine(svc, 'shown-once');
      const cs = await api(svc, 'POST', `${UA(identityId)}/client-secrets`, as, { description: 'once' });
      const secret: string = cs.body.clientSecret;
      t.match(secret, HEX64);

      const list = await api(svc, 'GET', `${UA(identityId)}/client-secrets`, as);
      t.equal(list.status, 200);
      t.equal(list.body.clientSecretData.length, 2, 'both live secrets are listed');
      const listed = JSON.stringify(list.body);
      t.notOk(listed.includes(secret), 'the list does not contain the value');
      t.notOk(/clientSecret"|secretHash|hash/i.test(listed.replace(/clientSecret(Prefix|TTL|NumUses|NumUsesLimit)/g, '')), 'nor a value or hash field');
      const one = await api(svc, 'GET', `${UA(identityId)}/client-secrets/${cs.body.clientSecretData.id}`, as);
      t.notOk(JSON.stringify(one.body).includes(secret));
      t.notOk('clientSecret' in one.body);

      const sql = svc.services.store.sql;
      const audit = await sql<{ t: string }[]>`select string_agg(a::text, '\n') as t from audit_log a`;
      t.notOk(audit[0]!.t.includes(secret), 'the audit trail does not contain it');
      const stored = await sql<{ t: string }[]>`select string_agg(c::text, '\n') as t from identity_client_secrets c`;
      t.notOk(stored[0]!.t.includes(secret), 'the table of client secrets does not contain it');
      t.notOk(stored[0]!.t.includes(Buffer.from(secret).toString('hex')), 'not even as bytes');
      const created = await sql`select 1 from audit_log where event_type = 'create-identity-universal-auth-client-secret'
        and metadata->>'clientSecretId' = ${cs.body.clientSecretData.id}`;
      t.equal(created.length, 1, 'its creation is audited by id');
    });

    t.test('generate new credentials: tokens of the revoked secret die at once, the new one logs in', async (t) => {
      const m = await machine(svc, 'rotating', [[seeded.projectId, 'viewer']]);
      t.equal((await read(m.token)).status, 200, 'the old credentials work');
      const secrets = (await api(svc, 'GET', `${UA(m.identityId)}/client-secrets`, as)).body.clientSecretData;
      t.equal(secrets.length, 1);
      const oldId = secrets[0].id;

      const fresh = await api(svc, 'POST', `${UA(m.identityId)}/client-secrets`, as, { description: 'rotated' });
      t.equal(fresh.status, 200);
      t.equal((await read(m.token)).status, 200, 'a new secret does not end the old one');

      const revoked = await api(svc, 'POST', `${UA(m.identityId)}/client-secrets/${oldId}/revoke`, as);
      t.equal(revoked.status, 200);
      t.match(revoked.body.clientSecretData, { id: oldId, isClientSecretRevoked: true });
      t.notOk('clientSecret' in revoked.body);
      isError(t, await read(m.token), 401, 'TokenError');
      isError(
        t, await request(`${svc.url}/api/v1/auth/universal-auth/login`, { method: 'POST', json: { clientId: m.clientId, clientSecret: m.clientSecret } }),
        401, 'UnauthorizedError', 'Invalid credentials',
      );
      const newToken = await login(svc.url, { clientId: m.clientId, clientSecret: fresh.body.clientSecret });
      t.equal((await read(newToken)).status, 200, 'the new secret logs in and reads');

      const listed = (await api(svc, 'GET', `${UA(m.identityId)}/client-secrets`, as)).body.clientSecretData;
      t.same(listed.map((c: any) => c.id), [fresh.body.clientSecretData.id], 'revoked secrets are not listed');

      const before = await snapshot(svc);
      const again = await api(svc, 'POST', `${UA(m.identityId)}/client-secrets/${oldId}/revoke`, as);
      t.equal(again.status, 200, 'revoking again answers the same');
      t.equal(again.body.clientSecretData.isClientSecretRevoked, true);
      t.same(await snapshot(svc), before, 'and changes nothing (no second audit entry)');
    });

    t.test('deleting an identity ends its tokens at once and removes its memberships', async (t) => {
      const m = await machine(svc, 'doomed', [[seeded.projectId, 'member']]);
      t.equal((await read(m.token)).status, 200);
      const r = await api(svc, 'DELETE', `/api/v1/identities/${m.identityId}`, as);
      t.equal(r.status, 200);
      isError(t, await read(m.token), 401, 'TokenError');
      const rows = await svc.services.store.sql`select 1 from project_memberships where identity_id = ${m.identityId}`;
      t.equal(rows.length, 0);
    });

    t.test('only the superadmin administers identities', async (t) => {
      const person = await plainUser(svc, 'pat@example.test');
      const projectAdmin = await machine(svc, 'project-admin', [[seeded.projectId, 'admin']]);
      const member = await machine(svc, 'member', [[seeded.projectId, 'member']]);
      const viewer = await machine(svc, 'viewer', [[seeded.projectId, 'viewer']]);
      const target = await machine(svc, 'target');
      const bare = await svc.services.identities.create(SYSTEM, { name: 'no-ua-yet' });
      const [cs] = await svc.services.store.identities.listClientSecrets(target.identityId);

      const ops: Array<[string, 'GET' | 'POST' | 'DELETE', string, unknown?]> = [
        ['create identity', 'POST', '/api/v1/identities', { name: 'sneaky' }],
        ['list identities', 'GET', '/api/v1/identities'],
        ['get identity', 'GET', `/api/v1/identities/${target.identityId}`],
        ['delete identity', 'DELETE', `/api/v1/identities/${target.identityId}`],
        ['attach Universal Auth', 'POST', UA(bare.id), {}],
        ['get Universal Auth', 'GET', UA(target.identityId)],
        ['create client secret', 'POST', `${UA(target.identityId)}/client-secrets`, {}],
        ['list client secrets', 'GET', `${UA(target.identityId)}/client-secrets`],
        ['get client secret', 'GET', `${UA(target.identityId)}/client-secrets/${cs!.id}`],
        ['revoke client secret', 'POST', `${UA(target.identityId)}/client-secrets/${cs!.id}/revoke`],
        ['revoke its own client secret', 'POST', `${UA(projectAdmin.identityId)}/client-secrets/${projectAdmin.identityId}/revoke`],
      ];
      const before = await snapshot(svc);
      for (const [name, method, path, body] of ops) {
        for (const [who, token] of [['a person who is not superadmin', person.token], ['a project admin identity', projectAdmin.token], ['a member identity', member.token], ['a viewer identity', viewer.token]] as const) {
          t.test(`${name}: ${who}`, async (t) => isError(t, await api(svc, method, path, token, body), 403, 'PermissionDenied'));
        }
        t.test(`${name}: no token`, async (t) => isError(t, await api(svc, method, path, undefined, body), 401, 'UnauthorizedError', 'Token missing'));
      }
      t.test('nothing changed', async (t) => t.same(await snapshot(svc), before));
      t.test('the target still works', async (t) => {
        t.equal((await api(svc, 'GET', `/api/v1/identities/${target.identityId}`, as)).status, 200);
        t.equal((await read(projectAdmin.token)).status, 200);
      });
    });

    t.test('bad input: a 4xx JSON answer, nothing changed', async (t) => {
      const m = await machine(svc, 'bad-input');
      const other = await machine(svc, 'other');
      const [otherSecret] = await svc.services.store.identities.listClientSecrets(other.identityId);
      const bare = await svc.services.identities.create(SYSTEM, { name: 'bare' });
      const missing = '00000000-0000-4000-8000-000000000000';
      const before = await snapshot(svc);
      const raw = (method: string, path: string, headers: Record<string, string>, body: string) =>
        request(`${svc.url}${path}`, { method, token: as, headers, body });

      const cases: Array<[string, Promise<any>, number]> = [
        ['no body', api(svc, 'POST', '/api/v1/identities', as), 422],
        ['empty name', api(svc, 'POST', '/api/v1/identities', as, { name: '   ' }), 422],
        ['long name', api(svc, 'POST', '/api/v1/identities', as, { name: 'x'.repeat(65) }), 422],
        ['name of the wrong type', api(svc, 'POST', '/api/v1/identities', as, { name: 5 }), 422],
        ['an array body', api(svc, 'POST', '/api/v1/identities', as, [{ name: 'x' }]), 422],
        ['a newline in the name', api(svc, 'POST', '/api/v1/identities', as, { name: 'ci\nrunner' }), 422],
        ['a NUL in the name', api(svc, 'POST', '/api/v1/identities', as, { name: 'ci\u0000runner' }), 422],
        ['a C1 control character in the name', api(svc, 'POST', '/api/v1/identities', as, { name: 'ci\u0085runner' }), 422],
        ['a lone surrogate in the name', raw('POST', '/api/v1/identities', { 'content-type': 'application/json' }, '{"name":"ci\\ud800runner"}'), 422],
        ['malformed JSON', raw('POST', '/api/v1/identities', { 'content-type': 'application/json' }, '{"name":'), 400],
        ['XML', raw('POST', '/api/v1/identities', { 'content-type': 'text/xml' }, '<name/>'), 415],
        ['another organization', api(svc, 'POST', '/api/v1/identities', as, { name: 'x', organizationId: "1' or '1'='1" }), 404],
        ['list of another organization', api(svc, 'GET', '/api/v1/identities?orgId=nope', as), 404],
        ['malformed identity id', api(svc, 'GET', '/api/v1/identities/not-a-uuid', as), 404],
        ['unknown identity id', api(svc, 'DELETE', `/api/v1/identities/${missing}`, as), 404],
        ['malformed id on delete', api(svc, 'DELETE', `/api/v1/identities/${encodeURIComponent("'; drop table identities; --")}`, as), 404],
        ['attach to an unknown identity', api(svc, 'POST', UA(missing), as, {}), 404],
        ['attach to a malformed id', api(svc, 'POST', UA('zzz'), as, {}), 404],
        ['TTL 0', api(svc, 'POST', UA(bare.id), as, { accessTokenTTL: 0 }), 422],
        ['negative TTL', api(svc, 'POST', UA(bare.id), as, { accessTokenTTL: -5 }), 422],
        ['fractional TTL', api(svc, 'POST', UA(bare.id), as, { accessTokenTTL: 1.5 }), 422],
        ['TTL as words', api(svc, 'POST', UA(bare.id), as, { accessTokenTTL: 'an hour' }), 422],
        ['TTL as boolean', api(svc, 'POST', UA(bare.id), as, { accessTokenMaxTTL: true }), 422],
        ['max TTL 0', api(svc, 'POST', UA(bare.id), as, { accessTokenMaxTTL: 0 }), 422],
        ['TTL above ten years', api(svc, 'POST', UA(bare.id), as, { accessTokenTTL: 315360001, accessTokenMaxTTL: 315360001 }), 422],
        ['TTL above max TTL', api(svc, 'POST', UA(bare.id), as, { accessTokenTTL: 100, accessTokenMaxTTL: 50 }), 400],
        ['TTL beyond int32', api(svc, 'POST', UA(bare.id), as, { accessTokenTTL: 1e12 }), 422],
        ['get Universal Auth not attached', api(svc, 'GET', UA(bare.id), as), 404],
        ['client secret without Universal Auth', api(svc, 'POST', `${UA(bare.id)}/client-secrets`, as, {}), 404],
        ['client secrets of an unknown identity', api(svc, 'GET', `${UA(missing)}/client-secrets`, as), 404],
        ['negative secret TTL', api(svc, 'POST', `${UA(m.identityId)}/client-secrets`, as, { ttl: -1 }), 422],
        ['uses limit as text', api(svc, 'POST', `${UA(m.identityId)}/client-secrets`, as, { numUsesLimit: 'many' }), 422],
        ['long description', api(svc, 'POST', `${UA(m.identityId)}/client-secrets`, as, { description: 'd'.repeat(300) }), 422],
        ['description of the wrong type', api(svc, 'POST', `${UA(m.identityId)}/client-secrets`, as, { description: { a: 1 } }), 422],
        ['revoke a malformed secret id', api(svc, 'POST', `${UA(m.identityId)}/client-secrets/nope/revoke`, as), 404],
        ['revoke an unknown secret', api(svc, 'POST', `${UA(m.identityId)}/client-secrets/${missing}/revoke`, as), 404],
        ["revoke another identity's secret", api(svc, 'POST', `${UA(m.identityId)}/client-secrets/${otherSecret!.id}/revoke`, as), 404],
        ["get another identity's secret", api(svc, 'GET', `${UA(m.identityId)}/client-secrets/${otherSecret!.id}`, as), 404],
      ];
      for (const [name, p, status] of cases) {
        const r = await p;
        t.test(name, async (t) => isError(t, r, status));
      }
      t.test('nothing changed', async (t) => t.same(await snapshot(svc), before));
      t.test('the other identity still logs in', async (t) => {
        t.type(await login(svc.url, other), 'string', 'an access token');
      });
    });
  });
}
