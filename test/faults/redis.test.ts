// A hung Redis (SIGSTOP for 5 s, then SIGCONT) between two replicas (real processes):
// a write acknowledged by A is never followed by a stale read on B, during the hang
// and after it. 200 iterations of: read on B (caches the value), write on A, read on B.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { signupAdmin } from '../helpers/admin.js';
import { freshDatabase } from '../helpers/db.js';
import { request } from '../helpers/http.js';
import { testRedis } from '../helpers/redis.js';
import { serviceKeys, spawnService } from './helpers.js';

t.setTimeout(180_000);

const ITERATIONS = 200;
const FREEZE_AT = 50;
const FREEZE_MS = 5_000;

t.test('Redis frozen for 5 s: 0 stale reads in 200 write-then-read iterations', async (t) => {
  const redis = await testRedis(t);
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-faults-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = { ...serviceKeys(), DATABASE_URL: await freshDatabase(t), REDIS_URL: redis.url, DATA_DIR: dataDir };
  const a = await spawnService(t, env);
  const b = await spawnService(t, env);
  t.teardown(() => redis.thaw());

  const admin = await signupAdmin(a.url);
  t.equal((await request(`${a.url}/api/v1/projects`, { method: 'POST', token: admin.token, json: { projectName: 'homelab' } })).status, 200);
  const scope = { projectSlug: 'homelab', environment: 'prod', secretPath: '/' };
  t.equal((await request(`${a.url}/api/v3/secrets/raw/KEY`, { method: 'POST', token: admin.token, json: { ...scope, secretValue: 'v0' } })).status, 200);
  const readB = async () => {
    const r = await request(`${b.url}/api/v3/secrets/raw/KEY?workspaceSlug=homelab&environment=prod&secretPath=/`, { token: admin.token });
    return r.status === 200 ? (r.body.secret.secretValue as string) : `status ${r.status}`;
  };

  let frozen = false;
  let frozenIterations = 0;
  let thawed: Promise<void> | undefined;
  const stale: string[] = [];
  const failed: string[] = [];
  const started = performance.now();
  for (let i = 1; i <= ITERATIONS; i++) {
    if (i === FREEZE_AT) {
      redis.freeze();
      frozen = true;
      thawed = new Promise((resolve) =>
        setTimeout(() => {
          redis.thaw();
          frozen = false;
          resolve();
        }, FREEZE_MS),
      );
    }
    if (frozen) frozenIterations++;
    const before = await readB(); // B caches v(i-1) when it may
    if (before !== `v${i - 1}`) stale.push(`iteration ${i}: before the write B read ${before}, expected v${i - 1}`);
    const w = await request(`${a.url}/api/v3/secrets/raw/KEY`, { method: 'PATCH', token: admin.token, json: { ...scope, secretValue: `v${i}` } });
    if (w.status !== 200) {
      failed.push(`iteration ${i}: write ${w.status}`);
      break;
    }
    const after = await readB();
    if (after !== `v${i}`) stale.push(`iteration ${i}${frozen ? ' (frozen)' : ''}: B read ${after} after A acknowledged v${i}`);
  }
  await thawed;
  const seconds = (performance.now() - started) / 1000;
  t.same(failed, [], 'every write acknowledged');
  t.same(stale, [], '0 stale reads');
  t.ok(frozenIterations > 0, `${frozenIterations} iterations ran while Redis was frozen`);
  console.log(`# faults/redis: ${ITERATIONS} iterations in ${seconds.toFixed(1)} s, ${frozenIterations} while frozen, ${stale.length} stale`);

  // Both replicas serve from their caches again: ready, with Redis confirmed.
  for (const r of [a, b]) {
    const ready = await request(`${r.url}/api/health/ready`);
    t.equal(ready.status, 200);
    t.equal(ready.body.checks.redis, 'ok');
    t.ok(r.alive());
  }
});
