// Hostile input gets a 4xx JSON answer and changes nothing: malformed JSON, wrong
// types, oversized bodies, path traversal, forged and expired tokens.
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import t from 'tap';
import { identityTokens, newTokenSecret } from '../../server/auth/tokens.js';
import { parseConfig } from '../../server/config.js';
import { ESO_LIST_QUERY, JSON_TYPE, request } from '../helpers/http.js';
import { BACKENDS, login, seedHomelab, startTestService, testEnv } from '../helpers/service.js';

for (const backend of BACKENDS) {
  t.test(`hostile input (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend));
    const seeded = await seedHomelab(svc.services);
    const token = await login(svc.url, seeded);
    const sql = svc.services.store.sql;
    const snapshot = async () => ({
      tokens: (await sql`select count(*)::int as n from identity_access_tokens`)[0]!.n,
      secrets: (await sql`select count(*)::int as n from secrets`)[0]!.n,
      audit: (await sql`select count(*)::int as n from audit_log`)[0]!.n,
      failures: (await sql`select coalesce(sum(failed_logins), 0)::int as failed_logins from identity_login_failures where identity_id = ${seeded.identityId}`)[0]!.failedLogins,
    });
    const before = await snapshot();
    const loginUrl = `${svc.url}/api/v1/auth/universal-auth/login`;

    t.test('malformed JSON: 400', async (t) => {
      const r = await request(loginUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"clientId":' });
      t.equal(r.status, 400);
      t.equal(r.contentType, JSON_TYPE);
      t.equal(r.body.error, 'BadRequest');
    });

    t.test('wrong types: 422', async (t) => {
      for (const body of [[], 'str', 42, null, { clientId: ['a'], clientSecret: {} }, { clientId: seeded.clientId, clientSecret: true }]) {
        const r = await request(loginUrl, { method: 'POST', json: body });
        t.equal(r.status, 422, `body ${JSON.stringify(body)}`);
        t.equal(r.body.error, 'ValidationFailure');
        t.type(r.body.message, 'string');
      }
      const revoke = await request(`${svc.url}/api/v1/auth/token/revoke`, { method: 'POST', json: { accessToken: 7 } });
      t.equal(revoke.status, 422);
    });

    t.test('prototype keys in a body do nothing', async (t) => {
      const r = await request(loginUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"__proto__":{"clientId":"x"},"constructor":{"prototype":{"y":1}}}',
      });
      t.equal(r.status, 422);
      t.equal(({} as any).y, undefined);
    });

    t.test('oversized body: 413', async (t) => {
      const r = await request(loginUrl, {
        method: 'POST',
        json: { clientId: seeded.clientId, clientSecret: 'x'.repeat(2 * 1024 * 1024) },
      });
      t.equal(r.status, 413);
      t.equal(r.contentType, JSON_TYPE);
    });

    t.test('unsupported content type: 415', async (t) => {
      const r = await request(loginUrl, { method: 'POST', headers: { 'content-type': 'text/xml' }, body: '<a/>' });
      t.equal(r.status, 415);
    });

    t.test('path traversal and odd paths in secretPath: 422, never another folder', async (t) => {
      for (const p of ['/..', '/../etc', '/my-app/../', '%2F..%2F', '/./', '/a//b', 'relative', '/a\\b', '/%00', '/a b', `/${'a/'.repeat(30)}`]) {
        const r = await request(`${svc.url}/api/v3/secrets/raw?environment=prod&workspaceSlug=homelab&secretPath=${encodeURIComponent(p).replace(/%25/g, '%')}`, { token });
        t.equal(r.status, 422, `secretPath ${JSON.stringify(p)}`);
        t.equal(r.body.error, 'ValidationFailure');
      }
    });

    t.test('malformed ids: 404, never a 500', async (t) => {
      for (const id of ['-'.repeat(36), 'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz', "1' or '1'='1", '0'.repeat(64)]) {
        const r = await request(`${svc.url}/api/v3/secrets/raw?environment=prod&workspaceId=${encodeURIComponent(id)}`, { token });
        t.equal(r.status, 404, id);
        t.equal(r.body.error, 'NotFound');
      }
    });

    t.test('odd secret names: 404, 400 or 422, never a 500', async (t) => {
      for (const name of ['%2E%2E', '..%2FGATEWAY_TOKEN', '%00', 'A%3AB', '%E0%A4%A']) {
        const r = await request(`${svc.url}/api/v3/secrets/raw/${name}?environment=prod&workspaceSlug=homelab`, { token });
        t.ok(r.status === 404 || r.status === 400 || r.status === 422, `${name}: ${r.status}`);
        t.equal(r.contentType, JSON_TYPE);
      }
    });

    t.test('forged and expired tokens: 401 TokenError', async (t) => {
      const [, payload] = token.split('.');
      const none = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${payload}.`;
      const otherKey = await new SignJWT({ authTokenType: 'identityAccessToken', identityId: seeded.identityId, clientSecretId: randomUUID() })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer('vault-standalone')
        .setJti(randomUUID())
        .setExpirationTime('1h')
        .sign(new Uint8Array(32));
      const tampered = (() => {
        const [h, p, s] = token.split('.');
        const claims = JSON.parse(Buffer.from(p!, 'base64url').toString());
        claims.identityId = randomUUID();
        return `${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${s}`;
      })();
      const realKey = identityTokens(parseConfig(svc.env).authSecret);
      const expired = await realKey.sign({ identityId: seeded.identityId, clientSecretId: randomUUID(), tokenId: randomUUID(), secret: newTokenSecret().secret, exp: Math.floor(Date.now() / 1000) - 60 });
      const unknownId = await realKey.sign({ identityId: seeded.identityId, clientSecretId: randomUUID(), tokenId: randomUUID(), secret: newTokenSecret().secret, exp: Math.floor(Date.now() / 1000) + 600 });
      for (const [name, bad] of Object.entries({ none, otherKey, tampered, expired, unknownId })) {
        const r = await request(`${svc.url}/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { token: bad });
        t.equal(r.status, 401, name);
        t.equal(r.body.error, 'TokenError', name);
      }
      const revokeForged = await request(`${svc.url}/api/v1/auth/token/revoke`, { method: 'POST', json: { accessToken: otherKey } });
      t.equal(revokeForged.status, 401);
    });

    t.test('nothing changed', async (t) => {
      t.same(await snapshot(), before);
      const r = await request(`${svc.url}/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { token });
      t.equal(r.status, 200);
      t.equal(r.body.secrets.length, 14);
    });
  });
}
