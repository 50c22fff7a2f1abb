// A fault is never a value: while expanding references, only "not found" and "invalid
// reference" may leave `${...}` as written (as Infisical does). A database that fails in
// the middle of the request, or crypto that fails, fails the request (503), never a 200
// carrying the literal reference text.
import t from 'tap';
import type { Crypto } from '../../../crypto/index.js';
import { CryptoError } from '../../../crypto/index.js';
import { SYSTEM, type Actor } from '../../../server/domain/access.js';
import { secretsDomain } from '../../../server/domain/secrets.js';
import { folderSnapshots } from '../../../server/domain/snapshots.js';
import postgres from 'postgres';
import { request, type JsonResponse } from '../../helpers/http.js';
import { login, seedHomelab, startTestService, testEnv } from '../../helpers/service.js';

t.test('the database fails mid-request: 503, not the literal reference', async (t) => {
  const env = await testEnv(t, 'postgres+redis');
  // In-process caches: the list's own rows are served from memory once warm.
  const { REDIS_URL: _redis, ...local } = env;
  const svc = await startTestService(t, local);
  const s = svc.services;
  const seeded = await seedHomelab(s);
  const project = { slug: 'homelab' };
  await s.folders.create(SYSTEM, { project, environment: 'dev', name: 'app' });
  await s.secrets.create(SYSTEM, { project, environment: 'dev', secretPath: '/app', key: 'DB', value: 'dev-db' });
  await s.secrets.create(SYSTEM, { project, environment: 'prod', secretPath: '/', key: 'DSN', value: 'postgres://${dev.app.DB}' });
  await s.secrets.create(SYSTEM, { project, environment: 'prod', secretPath: '/', key: 'MISSING', value: 'x-${dev.app.NOPE}-${nowhere.KEY}' });
  const token = await login(svc.url, seeded);
  const listUrl = `${svc.url}/api/v3/secrets/raw?workspaceSlug=homelab&environment=prod&secretPath=%2F`;
  const values = (r: { body: any }) => Object.fromEntries(r.body.secrets.map((x: any) => [x.secretKey, x.secretValue]));

  // Warm: token, project, role and the prod folder are cached; dev /app is not read yet.
  const plain = await request(listUrl, { token });
  t.equal(plain.status, 200);
  t.equal(values(plain).DSN, 'postgres://${dev.app.DB}', 'unexpanded when not asked');

  // The one query this request needs (dev /app, for the reference) waits on a lock the
  // test holds; while it waits, its database connection is killed.
  const admin = postgres(env.DATABASE_URL!, { max: 1, onnotice: () => {} });
  t.teardown(() => admin.end());
  let expanded: Promise<JsonResponse> | undefined;
  await admin.begin(async (tx) => {
    await tx`lock table folders in access exclusive mode`;
    expanded = request(`${listUrl}&expandSecretReferences=true`, { token });
    const waiting = async () =>
      (await tx<{ pid: number }[]>`select pid from pg_stat_activity where datname = current_database()
        and application_name = 'vault-standalone' and wait_event_type = 'Lock'`).map((r) => r.pid);
    let pids: number[] = [];
    for (let i = 0; i < 500 && pids.length === 0; i++) pids = await waiting();
    t.equal(pids.length, 1, "the request's query is waiting on the database");
    await tx`select pg_terminate_backend(pid) from unnest(${tx.array(pids)}::int[]) as pid`;
  });
  const r = await expanded!;
  t.equal(r.status, 503, 'the reference could not be resolved: 503');
  t.equal(r.body.error, 'ServiceUnavailable');
  t.notOk(JSON.stringify(r.body).includes('${dev.app.DB}'), 'no literal reference text is handed out');

  const back = await request(`${listUrl}&expandSecretReferences=true`, { token });
  t.equal(back.status, 200, 'the next request reconnects');
  t.equal(values(back).DSN, 'postgres://dev-db', 'expanded');
  t.equal(values(back).MISSING, 'x-${dev.app.NOPE}-${nowhere.KEY}', 'a reference that names nothing stays as written (not found is not a fault)');
});

t.test('crypto fails while a reference is opened: the error, not the literal reference', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  const s = svc.services;
  const seeded = await seedHomelab(s);
  const project = { slug: 'homelab' };
  await s.secrets.create(SYSTEM, { project, environment: 'dev', secretPath: '/', key: 'DB', value: 'dev-db' });
  await s.secrets.create(SYSTEM, { project, environment: 'prod', secretPath: '/', key: 'DSN', value: 'postgres://${dev.DB}' });
  let calls = 0;
  // The folder opens; the second task (the reference's target) finds the workers gone.
  const failing: Pick<Crypto, 'openMany' | 'sealMany'> = {
    openMany: (...args) => (++calls === 2 ? Promise.reject(new CryptoError('KEY_UNAVAILABLE')) : s.crypto.openMany(...args)),
    sealMany: (...args) => s.crypto.sealMany(...args),
  };
  const secrets = secretsDomain({ store: s.store, crypto: failing, access: s.access, snapshots: folderSnapshots({ store: s.store, caches: s.caches }), changes: s.changes });
  const eso: Actor = { kind: 'identity', identityId: seeded.identityId };
  await t.rejects(
    secrets.get(eso, { project, environment: 'prod', secretName: 'DSN', expandSecretReferences: true }),
    { code: 'KEY_UNAVAILABLE' },
    'the crypto failure reaches the caller (answered 503)',
  );
  t.equal(calls, 2, 'it failed while opening the reference');
});
