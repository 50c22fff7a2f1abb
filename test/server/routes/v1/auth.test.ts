// Token revoke / renew input: a token longer than today's (a new claim) is still a
// token; each validation failure says what is wrong with it.
import { hkdfSync } from 'node:crypto';
import { SignJWT, decodeJwt } from 'jose';
import t from 'tap';
import { parseConfig } from '../../../../server/config.js';
import { JSON_TYPE, request } from '../../../helpers/http.js';
import { login, seedHomelab, startTestService, testEnv } from '../../../helpers/service.js';

t.test('revoke / renew accessToken bounds and messages', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const seeded = await seedHomelab(svc.services);
  const post = (path: 'revoke' | 'renew', body: unknown) => request(`${svc.url}/api/v1/auth/token/${path}`, { method: 'POST', json: body });

  t.test('a valid token of 1000+ characters (an extra claim) is revoked', async (t) => {
    const short = await login(svc.url, seeded);
    // The same token (same jti) re-signed with a large extra claim, as a future version might issue.
    const claims = decodeJwt(short);
    const key = new Uint8Array(hkdfSync('sha256', parseConfig(svc.env).authSecret, Buffer.alloc(0), 'vault-standalone/identityAccessToken/v1', 32));
    const long = await new SignJWT({ ...claims, futureClaim: 'x'.repeat(800) })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .sign(key);
    t.ok(long.length > 1000, `token is ${long.length} characters`);

    const renewed = await post('renew', { accessToken: long });
    t.equal(renewed.status, 200, 'renew accepts it');
    const revoked = await post('revoke', { accessToken: long });
    t.equal(revoked.status, 200, 'revoke accepts it');
    t.same(revoked.body, { message: 'Successfully revoked access token' });
    const after = await request(`${svc.url}/api/v1/projects/slug/homelab`, { token: short });
    t.equal(after.status, 401, 'the token it names is refused from then on');
  });

  t.test('an unknown 600-character token: 401, not a validation error', async (t) => {
    for (const path of ['revoke', 'renew'] as const) {
      const r = await post(path, { accessToken: 'a'.repeat(600) });
      t.equal(r.status, 401, path);
      t.equal(r.body.error, 'TokenError', path);
    }
  });

  t.test('too long: 422 saying so', async (t) => {
    for (const path of ['revoke', 'renew'] as const) {
      const r = await post(path, { accessToken: 'a'.repeat(8193) });
      t.equal(r.status, 422, path);
      t.equal(r.contentType, JSON_TYPE);
      t.equal(r.body.error, 'ValidationFailure');
      t.equal(r.body.message, 'accessToken: accessToken must be at most 8192 characters', path);
    }
  });

  t.test('missing, empty or not a string: 422 saying which', async (t) => {
    for (const [body, message] of [
      [{}, 'accessToken: accessToken is required'],
      [{ accessToken: '   ' }, 'accessToken: accessToken is required'],
      [{ accessToken: 7 }, 'accessToken: accessToken must be a string'],
    ] as const) {
      const r = await post('revoke', body);
      t.equal(r.status, 422, JSON.stringify(body));
      t.equal(r.body.message, message);
    }
  });

  t.test('login secrets keep their 512 cap, worded as a length', async (t) => {
    const r = await request(`${svc.url}/api/v1/auth/universal-auth/login`, {
      method: 'POST',
      json: { clientId: seeded.clientId, clientSecret: 'a'.repeat(513) },
    });
    t.equal(r.status, 422);
    t.equal(r.body.message, 'clientSecret: clientSecret must be at most 512 characters');
  });
});
