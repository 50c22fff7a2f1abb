// rekey (issue 12.4, project data keys): every project gets a fresh data key, every
// value and comment of every version reads back identical, the old data keys are gone
// and no longer open what is stored; a kill half-way is finished by the next run.
import t, { type Test } from 'tap';
import { createCrypto } from '../../../crypto/index.js';
import { dataKeyAad } from '../../../server/domain/keyring.js';
import { secretAad } from '../../../server/domain/secrets.js';
import { softhsmAvailable, softToken } from '../../helpers/softhsm.js';
import { openServices, readAll, runCli, spawnCliWithHooks, withDatabase } from './helpers.js';
import { assertOpensWith, fixture, type Fixture } from './rotation.js';

t.setTimeout(360_000);

interface KeyRow { projectId: string; dataKeyId: string; wrapped: Buffer }

const projectKeys = (f: Fixture) =>
  withDatabase(f.env, (sql) => sql<KeyRow[]>`select p.id as project_id, p.data_key_id, k.wrapped
    from projects p join crypto_keys k on k.id = p.data_key_id order by p.created_at, p.id`);

/** The old (backed-up) wrapped data keys, with the root key, open none of the re-encrypted values; the new ones do. */
async function assertOldKeysUseless(t: Test, f: Fixture, before: KeyRow[]) {
  const now = await projectKeys(f);
  const rows = await withDatabase(f.env, (sql) => sql<
    { projectId: string; environmentId: string; folderId: string; id: string; key: string; version: number; valueBlob: Buffer }[]
  >`select e.project_id, fo.environment_id, s.folder_id, s.id, s.key, s.version, s.value_blob
    from secrets s join folders fo on fo.id = s.folder_id join environments e on e.id = fo.environment_id`);
  const crypto = await createCrypto({ encryptionKeyHex: f.env.ENCRYPTION_KEY!, threads: 1 });
  t.teardown(() => crypto.close());
  let tried = 0;
  for (const r of rows) {
    const aad = secretAad('value', { projectId: r.projectId, environmentId: r.environmentId, folderId: r.folderId, secretId: r.id, key: r.key, version: r.version });
    const item = [{ blob: r.valueBlob, aad }];
    const current = now.find((k) => k.projectId === r.projectId)!;
    await crypto.openMany(current.wrapped, dataKeyAad(current.dataKeyId), item); // control: the right aad, the new key opens
    const old = before.find((k) => k.projectId === r.projectId)!;
    const failed = await crypto.openMany(old.wrapped, dataKeyAad(old.dataKeyId), item).then(
      () => false,
      (err: { code?: string }) => err.code === 'OPEN_FAILED',
    );
    if (!failed) t.fail(`the old data key still opens ${r.key}`);
    tried++;
  }
  t.ok(tried >= 15, `no old data key opens any of the ${tried} re-encrypted values (each opens with its new key)`);
}

/** Every row of every version's history, opened with its project's current data key: id -> value|comment. */
async function readVersions(t: Test, f: Fixture): Promise<Map<string, string>> {
  const keys = await projectKeys(f);
  const rows = await withDatabase(f.env, (sql) => sql<
    { projectId: string; environmentId: string; folderId: string; id: string; secretId: string; key: string; version: number; valueBlob: Buffer; commentBlob: Buffer | null }[]
  >`select e.project_id, fo.environment_id, v.folder_id, v.id, v.secret_id, v.key, v.version, v.value_blob, v.comment_blob
    from secret_versions v join folders fo on fo.id = v.folder_id join environments e on e.id = fo.environment_id order by v.id`);
  const crypto = await createCrypto({ encryptionKeyHex: f.env.ENCRYPTION_KEY!, threads: 1 });
  const out = new Map<string, string>();
  try {
    for (const r of rows) {
      const at = { projectId: r.projectId, environmentId: r.environmentId, folderId: r.folderId, secretId: r.secretId, key: r.key, version: r.version };
      const k = keys.find((x) => x.projectId === r.projectId)!;
      const items = [{ blob: r.valueBlob, aad: secretAad('value', at) }, ...(r.commentBlob ? [{ blob: r.commentBlob, aad: secretAad('comment', at) }] : [])];
      const [value, comment] = await crypto.openMany(k.wrapped, dataKeyAad(k.dataKeyId), items);
      out.set(r.id, `${r.key} v${r.version}: ${value}|${comment ?? ''}`);
    }
  } finally {
    await crypto.close();
  }
  t.ok(out.size >= 16, `${out.size} version rows read`);
  return out;
}

t.test('rekey: fresh data keys, everything reads back, old keys gone and useless', async (t) => {
  const f = await fixture(t, 'postgres');
  const before = await projectKeys(f);
  const history = await readVersions(t, f);
  t.ok([...history.values()].some((v) => v.startsWith('DB_URL v1: postgres://a:b@db/app ✓|with a comment')), 'the history holds the overwritten value and its comment');
  t.equal(before.length, 3);
  const r = await runCli(['rekey'], f.env);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /re-keyed 3 projects \((\d+) values and comments re-encrypted; old data keys deleted\)/);
  const after = await projectKeys(f);
  for (const b of before) {
    const a = after.find((x) => x.projectId === b.projectId)!;
    t.not(a.dataKeyId, b.dataKeyId, 'a new data key');
  }
  const oldIds = before.map((b) => b.dataKeyId);
  const left = await withDatabase(f.env, (sql) => sql`select id from crypto_keys where id = any(${oldIds}::uuid[])`);
  t.equal(left.length, 0, 'the old data keys are deleted');
  await assertOpensWith(t, f, f.env.ENCRYPTION_KEY!, 'after rekey');
  t.same(await readVersions(t, f), history, 'every version of every secret reads back identical, comments too');
  await assertOldKeysUseless(t, f, before);
  const audit = await runCli(['audit-verify'], f.env);
  t.equal(audit.code, 0, audit.stdout + audit.stderr);
  const events = await withDatabase(f.env, (sql) => sql`select count(*)::int as n from audit_log where event_type = 'rekey-project'`);
  t.equal(events[0]!.n, 3, 'one audit entry per project');
});

t.test('rekey killed half-way through a project: old and new keys coexist and read, the next run finishes it, nothing lost', async (t) => {
  const f = await fixture(t, 'postgres');
  const before = await projectKeys(f);
  const history = await readVersions(t, f);
  // --batch-size 2: homelab (14 secrets, 14 versions) moves in 14 batches. Step 1 is the
  // new MAC key, step 2 the new audit key, step 3 homelab's start, steps 4 and 5 its
  // first two batches: killed there, it is half-way.
  const cli = spawnCliWithHooks(['rekey', '--batch-size', '2'], f.env, { pauseAt: 5 });
  await cli.stderrMatch(/^paused$/m);
  cli.child.kill('SIGKILL');
  t.equal((await cli.exit).signal, 'SIGKILL');
  const homelab = before.find((b) => b.projectId === f.seeded.projectId)!;
  const [mid] = await withDatabase(f.env, (sql) => sql<{ dataKeyId: string; previousDataKeyId: string | null }[]>`
    select data_key_id, previous_data_key_id from projects where id = ${homelab.projectId}`);
  t.equal(mid!.previousDataKeyId, homelab.dataKeyId, 'homelab is half-way: its old key is kept as the previous one');
  t.not(mid!.dataKeyId, homelab.dataKeyId, 'and a new key is current');
  const split = await withDatabase(f.env, (sql) => sql<{ dataKeyId: string; n: number }[]>`
    select data_key_id, count(*)::int as n from (select data_key_id from secrets union all select data_key_id from secret_versions) r
    where data_key_id in (${homelab.dataKeyId}, ${mid!.dataKeyId}) group by data_key_id order by n`);
  t.same(split.map((r) => [r.dataKeyId, r.n]), [[mid!.dataKeyId, 4], [homelab.dataKeyId, 24]], 'two batches of 2 rows moved, 24 rows still under the old key');
  const others = (await projectKeys(f)).filter((k) => k.projectId !== homelab.projectId);
  t.ok(others.every((o) => before.some((b) => b.dataKeyId === o.dataKeyId)), 'the two other projects are untouched');
  await assertOpensWith(t, f, f.env.ENCRYPTION_KEY!, 'between the runs (rows under both keys)');
  const again = await runCli(['rekey', '--batch-size', '2'], f.env);
  t.equal(again.code, 0, again.stderr);
  t.match(again.stderr, /resuming the unfinished run/);
  t.match(again.stdout, /re-keyed 3 projects/);
  const after = await projectKeys(f);
  t.ok(after.every((a) => !before.some((b) => b.dataKeyId === a.dataKeyId)), 'every project has a new key');
  const left = await withDatabase(f.env, (sql) => sql`select id from crypto_keys where id = any(${before.map((b) => b.dataKeyId)}::uuid[])
    union all select id from projects where previous_data_key_id is not null`);
  t.equal(left.length, 0, 'the old data keys are deleted, and no project is left half-way');
  await assertOpensWith(t, f, f.env.ENCRYPTION_KEY!, 'after the second run');
  t.same(await readVersions(t, f), history, 'every version of every secret reads back identical, comments too');
  await assertOldKeysUseless(t, f, before);
  const third = await runCli(['rekey'], f.env);
  t.match(third.stdout, /re-keyed 3 projects/, 'a later run is a new run');
});

t.test('rekey failing in a batch: nothing half-written, the next run finishes', async (t) => {
  const f = await fixture(t, 'postgres');
  const before = await projectKeys(f);
  const history = await readVersions(t, f);
  // Step 4: homelab's first batch has committed; the command fails there.
  const failed = await spawnCliWithHooks(['rekey', '--batch-size', '5'], f.env, { failAt: 4 }).exit;
  t.equal(failed.code, 1, 'the command fails');
  t.match(failed.stderr, /fault injected by the test at step 4/);
  await assertOpensWith(t, f, f.env.ENCRYPTION_KEY!, 'after the failure');
  const again = await runCli(['rekey'], f.env);
  t.equal(again.code, 0, again.stderr);
  t.match(again.stderr, /resuming the unfinished run/);
  t.same(await readVersions(t, f), history, 'every version reads back identical');
  await assertOldKeysUseless(t, f, before);
});

t.test('rekey and audit-verify with the root key in a PKCS#11 token (SoftHSM2)', { skip: !softhsmAvailable() }, async (t) => {
  const f = await fixture(t, 'postgres');
  const tok = softToken(t);
  const conf = { SOFTHSM2_CONF: process.env.SOFTHSM2_CONF! };
  const moved = await runCli(['rotate-key'], {
    ...f.env, ...conf, NEW_KEY_PROVIDER: 'pkcs11', NEW_PKCS11_MODULE: tok.module, NEW_PKCS11_TOKEN_LABEL: tok.tokenLabel,
    NEW_PKCS11_PIN_FILE: tok.pinFile, NEW_PKCS11_KEY_LABEL: tok.keyLabel,
  });
  t.equal(moved.code, 0, moved.stderr);
  const hsmEnv = { ...f.env, ...conf, ...tok.env, ENCRYPTION_KEY: '' };
  const before = await projectKeys(f);
  const r = await runCli(['rekey'], hsmEnv);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /re-keyed 3 projects/);
  const after = await projectKeys(f);
  t.ok(after.every((a) => !before.some((b) => b.dataKeyId === a.dataKeyId)), 'every project has a new key');
  const services = await openServices(t, hsmEnv);
  t.same(await readAll(services), f.before, 'every secret reads back identical, on the token');
  await services.close();
  const audit = await runCli(['audit-verify'], hsmEnv);
  t.equal(audit.code, 0, audit.stdout + audit.stderr);
});
