// rekey and the client-secret MAC key (issue 12.4): a re-key makes a new MAC key version
// current while the service runs; each client secret keeps the version its hash was made
// with, logs in under it (Universal Auth over HTTP) and is re-MACed under the current one
// at that login; the old version is deleted once no usable secret names it (revoked ones
// do not keep it), and never before.
import t from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { request } from '../../helpers/http.js';
import { seedHomelab, startTestService, testEnv } from '../../helpers/service.js';
import { runCli, withDatabase } from './helpers.js';

t.setTimeout(360_000);

t.test('MAC key versions: logins verify under the row\'s version, move to the current one, the old one goes when unused', async (t) => {
  const env = await testEnv(t, 'postgres+redis');
  const svc = await startTestService(t, env);
  const seeded = await seedHomelab(svc.services);
  const unused = await svc.services.identities.createClientSecret(SYSTEM, seeded.identityId);
  const revoked = await svc.services.identities.createClientSecret(SYSTEM, seeded.identityId);
  await svc.services.identities.revokeClientSecret(SYSTEM, seeded.identityId, revoked.clientSecretData.id);
  const login = (clientSecret: string) =>
    request(`${svc.url}/api/v1/auth/universal-auth/login`, { method: 'POST', json: { clientId: seeded.clientId, clientSecret } });
  const rows = () => withDatabase(env, (sql) => sql<{ id: string; macKeyId: string; secretHash: Buffer }[]>`
    select id, mac_key_id, secret_hash from identity_client_secrets order by created_at, id`);
  const keyExists = (id: string) => withDatabase(env, async (sql) => (await sql`select 1 from crypto_keys where id = ${id}`).length === 1);
  const currentMacKey = async () => (await withDatabase(env, (sql) => sql<{ keyId: string }[]>`select key_id from crypto_canary where id = 1`))[0]!.keyId;

  t.equal((await login(seeded.clientSecret)).status, 200, 'a login before the re-key');
  const old = await currentMacKey();
  const before = await rows();
  t.ok(before.length === 3 && before.every((r) => r.macKeyId === old), 'every client secret names the MAC key version it was made with');
  const usedId = before[0]!.id;

  const r = await runCli(['rekey'], env);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /0 old MAC key versions deleted; 2 usable secrets still on an older version/);
  const next = await currentMacKey();
  t.not(next, old, 'a new MAC key version is current');
  t.ok(await keyExists(old), 'the old version stays while usable secrets name it');
  const afterRun = await rows();
  const revokedRow = afterRun.find((x) => x.id === revoked.clientSecretData.id)!;
  t.ok(revokedRow.macKeyId === next && revokedRow.secretHash.equals(Buffer.alloc(32)), 'the revoked secret does not keep the old version (its hash is neutralised)');

  // The running service, over HTTP: the old version still verifies, and the row moves.
  const first = await login(seeded.clientSecret);
  t.equal(first.status, 200, 'a secret made under the old version logs in');
  const moved = (await rows()).find((x) => x.id === usedId)!;
  t.equal(moved.macKeyId, next, 'and is re-MACed under the current version at that login');
  t.not(moved.secretHash.toString('hex'), before[0]!.secretHash.toString('hex'), 'with a new hash');
  const [entry] = await withDatabase(env, (sql) => sql<{ metadata: Record<string, unknown> }[]>`select metadata from audit_log
    where event_type = 'login-identity-universal-auth' order by id desc limit 1`);
  t.equal(entry!.metadata.macKeyUpgraded, true, 'the login\'s audit entry says so');
  t.equal((await login(seeded.clientSecret)).status, 200, 'it logs in again, under the current version');
  t.equal((await login('f'.repeat(64))).status, 401, 'a wrong secret is still refused');
  t.equal((await login(revoked.clientSecret)).status, 401, 'the revoked secret is still refused');
  const fresh = await svc.services.identities.createClientSecret(SYSTEM, seeded.identityId);
  t.equal((await rows()).find((x) => x.id === fresh.clientSecretData.id)!.macKeyId, next, 'a new secret is made under the current version');
  t.equal((await login(fresh.clientSecret)).status, 200);

  const early = await runCli(['rekey', '--retire-mac-keys'], env);
  t.equal(early.code, 0, early.stderr);
  t.match(early.stderr, /0 old MAC key versions deleted; 1 usable secret still on an older version/);
  t.ok(await keyExists(old), 'not deleted while the unused secret names it');

  t.equal((await login(unused.clientSecret)).status, 200, 'the secret unused since the re-key logs in under the old version');
  const late = await runCli(['rekey', '--retire-mac-keys'], env);
  t.equal(late.code, 0, late.stderr);
  t.match(late.stderr, /1 old MAC key version deleted; 0 usable secrets still/);
  t.notOk(await keyExists(old), 'the old MAC key version is gone from the database');
  for (const s of [seeded.clientSecret, unused.clientSecret, fresh.clientSecret]) t.equal((await login(s)).status, 200, 'every usable secret logs in afterwards');
  const audit = await runCli(['audit-verify'], env);
  t.equal(audit.code, 0, audit.stdout + audit.stderr);
});
