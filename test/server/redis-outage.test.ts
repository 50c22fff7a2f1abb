// The service when Redis misbehaves: a change made while Redis is down is committed,
// answered 200 and in force on every replica (a replica that cannot hear Redis does not
// cache); start-up waits for a Redis that is not up yet.
import t from 'tap';
import { startService } from '../../server/app.js';
import { parseConfig } from '../../server/config.js';
import type { Logger } from '../../server/services.js';
import { textLogger } from '../../server/log.js';
import { ESO_LIST_QUERY, request } from '../helpers/http.js';
import { TestRedis, freePort, linkIs, testRedis } from '../helpers/redis.js';
import { INVENTORY, login, seedHomelab, testEnv, type TestService } from '../helpers/service.js';
import { api, machine, superadmin } from './admin/helpers.js';

function deferred<T>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Keeps every line, so a test can check that no value was logged. */
function recordingLog(lines: string[], onWarn: (m: string) => void = () => {}): Logger {
  return textLogger(
    {
      info: (m) => lines.push(m),
      warn: (m) => (lines.push(m), onWarn(m)),
      error: (m) => lines.push(m),
    },
    { fields: false },
  );
}

async function start(t: { teardown(fn: () => unknown): void }, env: Record<string, string>, log: Logger): Promise<TestService> {
  const service = await startService(parseConfig(env), log);
  t.teardown(() => service.close());
  return { ...service, url: `http://127.0.0.1:${service.port}`, env };
}

t.test('Redis killed: writes answer 200 and no replica serves what they changed', async (t) => {
  const redis = await testRedis(t);
  const env = await testEnv(t, 'postgres+redis', { REDIS_URL: redis.url });
  const lines: string[] = [];
  const A = await start(t, env, recordingLog(lines));
  const B = await start(t, env, recordingLog(lines));
  const as = (await superadmin(A)).token;
  const seeded = await seedHomelab(A.services);
  const P = seeded.projectId;
  const reader = await login(B.url, seeded);
  const toRevoke = await login(B.url, seeded);
  const downgraded = await machine(A, 'downgraded', [[P, 'member']]);
  const writer = await machine(A, 'writer', [[P, 'member']]);
  const list = (svc: TestService, token: string) => request(`${svc.url}/api/v3/secrets/raw?${ESO_LIST_QUERY}`, { token });
  const valueOf = async (svc: TestService, key: string) => {
    const r = await list(svc, reader);
    t.equal(r.status, 200);
    return r.body.secrets.find((s: { secretKey: string }) => s.secretKey === key)?.secretValue;
  };

  // B caches the folder's ciphertext, the tokens' liveness and the role.
  t.equal(await valueOf(B, 'GATEWAY_TOKEN'), INVENTORY.GATEWAY_TOKEN);
  t.equal((await list(B, toRevoke)).status, 200);
  t.equal((await list(B, downgraded.token)).status, 200);

  await redis.stop();
  await Promise.all([linkIs(A.services.bus, false), linkIs(B.services.bus, false)]);
  // Read again during the outage: were B to cache these, the changes below would be missed.
  t.equal(await valueOf(B, 'GATEWAY_TOKEN'), INVENTORY.GATEWAY_TOKEN);
  t.equal((await list(B, toRevoke)).status, 200);
  t.equal((await list(B, downgraded.token)).status, 200);

  const revoke = () => request(`${A.url}/api/v1/auth/token/revoke`, { method: 'POST', json: { accessToken: toRevoke } });
  const revoked = await revoke();
  t.equal(revoked.status, 200, `revoke answers 200 while Redis is down: ${JSON.stringify(revoked.body)}`);
  t.same(revoked.body, { message: 'Successfully revoked access token' });
  t.equal((await revoke()).status, 200, "ESO's retry of the revoke is answered 200 as well");

  const rotated = 'rotated-while-redis-was-down';
  const written = await api(A, 'PATCH', '/api/v3/secrets/raw/GATEWAY_TOKEN', writer.token, {
    workspaceId: P, environment: 'prod', secretPath: '/', secretValue: rotated,
  });
  t.equal(written.status, 200, `a secret write answers 200 while Redis is down: ${JSON.stringify(written.body)}`);
  const downgrade = await api(A, 'PATCH', `/api/v1/projects/${P}/memberships/identities/${downgraded.identityId}`, as, { role: 'no-access' });
  t.equal(downgrade.status, 200, `a role change answers 200 while Redis is down: ${JSON.stringify(downgrade.body)}`);

  for (const svc of [B, A]) {
    const name = svc === A ? 'A' : 'B';
    t.equal((await list(svc, toRevoke)).status, 401, `${name}: the revoked token is refused`);
    t.equal((await list(svc, downgraded.token)).status, 403, `${name}: the downgraded identity is refused`);
    t.equal(await valueOf(svc, 'GATEWAY_TOKEN'), rotated, `${name}: the new value is served`);
  }
  t.ok(lines.some((l) => /could not send an invalidation/.test(l)), 'the unsent invalidation is logged');
  t.notOk(lines.some((l) => l.includes(rotated) || l.includes(toRevoke)), 'no value or token in the logs');

  await redis.start();
  await Promise.all([linkIs(A.services.bus, true), linkIs(B.services.bus, true)]);
  for (let round = 0; round < 2; round++) {
    // The second round is served from the caches, refilled once Redis was back.
    t.equal((await list(B, toRevoke)).status, 401, 'Redis back: the revoked token stays refused');
    t.equal((await list(B, downgraded.token)).status, 403, 'Redis back: the downgrade stands');
    t.equal(await valueOf(B, 'GATEWAY_TOKEN'), rotated, 'Redis back: the new value is served');
  }
  const again = await api(A, 'PATCH', '/api/v3/secrets/raw/GATEWAY_TOKEN', writer.token, {
    workspaceId: P, environment: 'prod', secretPath: '/', secretValue: 'after-redis-came-back',
  });
  t.equal(again.status, 200);
  t.equal(await valueOf(B, 'GATEWAY_TOKEN'), 'after-redis-came-back', 'invalidations cross replicas again');
});

t.test('start-up waits for a Redis that is not up yet, then starts', async (t) => {
  const redis = new TestRedis(await freePort());
  t.teardown(() => redis.stop());
  const env = await testEnv(t, 'postgres+redis', { REDIS_URL: redis.url, DB_WAIT_SECONDS: '60' });
  const waiting = deferred<string>();
  const lines: string[] = [];
  const starting = start(t, env, recordingLog(lines, (m) => /^redis not reachable yet/.test(m) && waiting.resolve(m)));
  const first = await Promise.race([
    waiting.promise,
    starting.then(
      () => 'started without Redis',
      (err: Error) => `failed at once: ${err.message}`,
    ),
  ]);
  t.match(first, /^redis not reachable yet \(ECONNREFUSED\); retrying in 250 ms$/, 'start-up waits, saying why');
  await redis.start();
  const svc = await starting;
  t.ok(svc.services.bus.live, 'subscribed once Redis came up');
  const status = await request(`${svc.url}/api/status`);
  t.equal(status.status, 200);
  t.equal(status.body.redisConfigured, true);
});
