// audit-verify across an audit key change (issue 12.4): rekey gives the audit trail a new
// key while the service runs; a checkpoint entry under the new key records the chain's
// digest, the old key is deleted, the running service keeps appending (it follows the
// new key), and audit-verify checks the whole chain: entries of the destroyed key against
// the checkpoint's digest, later ones under the new key. Edits on either side break it.
import t from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { seedHomelab, startTestService, testEnv } from '../../helpers/service.js';
import { runCli, withDatabase } from './helpers.js';

t.setTimeout(360_000);

t.test('audit key re-keyed online: the chain verifies across the change, the old key is gone', async (t) => {
  const env = await testEnv(t, 'postgres+redis');
  const svc = await startTestService(t, env);
  const seeded = await seedHomelab(svc.services);
  const ref = { project: { id: seeded.projectId }, environment: 'prod', secretPath: '/' };
  const auditKey = async () => (await withDatabase(env, (sql) => sql<{ id: string }[]>`select id from crypto_keys where purpose = 'audit'`)).map((r) => r.id);
  const [old] = await auditKey();
  const before = await runCli(['audit-verify'], env);
  t.equal(before.code, 0, before.stdout + before.stderr);

  const r = await runCli(['rekey'], env);
  t.equal(r.code, 0, r.stderr);
  const now = await auditKey();
  t.equal(now.length, 1, 'one audit key');
  t.not(now[0], old, 'a new one');
  t.same(await withDatabase(env, (sql) => sql`select id from crypto_keys where id = ${old!}`), [], 'the old audit key is deleted from the database');
  const [checkpoint] = await withDatabase(env, (sql) => sql<{ id: number; keyId: string; metadata: Record<string, unknown> }[]>`
    select id, key_id, metadata from audit_log where event_type = 'audit-key-rekeyed'`);
  t.equal(checkpoint!.keyId, now[0], 'the checkpoint is MACed under the new key');
  t.equal(checkpoint!.metadata.previousKeyId, old, 'and names the old one');
  t.match(checkpoint!.metadata.digest, /^[0-9a-f]{64}$/, 'and records the chain\'s digest');

  // The running service (started with the old key) keeps auditing, under the new key.
  await svc.services.secrets.create(SYSTEM, { ...ref, key: 'AFTER_REKEY', value: 'written after the audit key changed' });
  const [last] = await withDatabase(env, (sql) => sql<{ eventType: string; keyId: string }[]>`
    select event_type, key_id from audit_log order by id desc limit 1`);
  t.same(last, { eventType: 'create-secret', keyId: now[0] }, 'the service appends under the new key');
  const oldEntries = await withDatabase(env, (sql) => sql<{ id: number }[]>`select id from audit_log where key_id = ${old!} order by id`);
  t.ok(oldEntries.length > 15, `${oldEntries.length} entries were MACed by the destroyed key`);

  const across = await runCli(['audit-verify'], env);
  t.equal(across.code, 0, across.stdout + across.stderr);
  t.match(across.stdout, /audit chain ok/);

  // An entry of the destroyed key edited: the checkpoint's digest no longer matches.
  const victim = oldEntries[3]!.id;
  const [orig] = await withDatabase(env, (sql) => sql<{ secretKey: string | null }[]>`select secret_key from audit_log where id = ${victim}`);
  await withDatabase(env, (sql) => sql`update audit_log set secret_key = 'EDITED' where id = ${victim}`);
  const edited = await runCli(['audit-verify'], env);
  t.equal(edited.code, 1, 'an old entry edited after the key change breaks the chain');
  t.match(edited.stdout, new RegExp(`audit chain BROKEN at entry id ${checkpoint!.id} `), 'at the checkpoint that vouched for it');
  await withDatabase(env, (sql) => sql`update audit_log set secret_key = ${orig!.secretKey} where id = ${victim}`);
  t.equal((await runCli(['audit-verify'], env)).code, 0, 'restored, it verifies again');

  // An entry after the checkpoint moved onto the old key (to escape the new key's MAC): broken there.
  const [latest] = await withDatabase(env, (sql) => sql<{ id: number }[]>`select id from audit_log
    where key_id = ${now[0]!} and event_type = 'create-secret' order by id desc limit 1`);
  await withDatabase(env, (sql) => sql`update audit_log set key_id = ${old!} where id = ${latest!.id}`);
  const moved = await runCli(['audit-verify'], env);
  t.equal(moved.code, 1);
  t.match(moved.stdout, new RegExp(`audit chain BROKEN at entry id ${latest!.id} `), 'an entry moved off the current key is not exempt');
});
