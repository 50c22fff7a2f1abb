// Issue 28.3: a backup taken after `rotate-key` and `rekey` holds nothing the retired
// root key opens. The pre-rotation bytes (every wrapped key, the canary, every sealed
// value and comment of every version) are read from the database before the rotation;
// the backup, decompressed, must hold none of them (raw or hex, as COPY writes bytea),
// while it does hold today's (the control: the search can find what is there). The
// backup restored: the old key is refused and unwraps no key in it, the new key reads
// every secret back.
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { createCrypto } from '../../../crypto/index.js';
import { dataKeyAad } from '../../../server/domain/keyring.js';
import { runCli, tempDir, withDatabase } from './helpers.js';
import { assertOpensWith, assertRefused, fixture, newKey, rotate } from './rotation.js';
import { readFileSync } from 'node:fs';

t.setTimeout(360_000);

/** Every sealed or wrapped byte string the database holds. */
const sealedBytes = (env: Record<string, string>) =>
  withDatabase(env, async (sql) => {
    const rows = await sql<{ b: Buffer }[]>`
      select wrapped as b from crypto_keys
      union all select blob from crypto_canary
      union all select value_blob from secrets
      union all select comment_blob from secrets where comment_blob is not null
      union all select value_blob from secret_versions
      union all select comment_blob from secret_versions where comment_blob is not null`;
    return rows.map((r) => r.b);
  });

/** The byte strings of `needles` found in `hay`, raw or as lowercase hex. */
function found(hay: Buffer, needles: Buffer[]): Buffer[] {
  return needles.filter((n) => hay.includes(n) || hay.includes(Buffer.from(n.toString('hex'))));
}

async function assertKeysUnwrapOnlyWith(t: Test, env: Record<string, string>, k1: string, k2: string) {
  const keys = await withDatabase(env, (sql) => sql<{ id: string; wrapped: Buffer }[]>`select id, wrapped from crypto_keys`);
  const old = await createCrypto({ encryptionKeyHex: k1, rootKeyVersion: 1, threads: 1 });
  const current = await createCrypto({ encryptionKeyHex: k2, rootKeyVersion: 2, threads: 1 });
  try {
    let refused = 0;
    for (const k of keys) {
      await current.mac(k.wrapped, dataKeyAad(k.id), 'probe'); // control: the new key unwraps it
      const failed = await old.mac(k.wrapped, dataKeyAad(k.id), 'probe').then(
        () => false,
        () => true,
      );
      if (failed) refused++;
      else t.fail(`the old root key unwraps key ${k.id}`);
    }
    t.equal(refused, keys.length, `the old root key unwraps none of the ${keys.length} keys in the restored backup`);
  } finally {
    await old.close();
    await current.close();
  }
}

t.test('embedded: rotate-key + rekey, then backup: no pre-rotation byte in it, the old key opens nothing', async (t) => {
  const f = await fixture(t, 'embedded');
  const k1 = f.env.ENCRYPTION_KEY!;
  const k2 = newKey();
  const old = await sealedBytes(f.env);
  t.ok(old.length >= 35, `${old.length} sealed or wrapped byte strings before the rotation`);

  const r = await rotate(f, k2);
  t.equal(r.code, 0, r.stderr);
  const env = { ...f.env, ENCRYPTION_KEY: k2 };
  const rk = await runCli(['rekey'], env);
  t.equal(rk.code, 0, rk.stderr);
  const now = await sealedBytes(env);

  const file = join(tempDir(t), 'after-rotation.backup');
  const b = await runCli(['backup', '--out', file], env);
  t.equal(b.code, 0, b.stderr);
  const content = gunzipSync(readFileSync(file));
  t.same(found(content, now).length, now.length, `control: all ${now.length} of today's sealed byte strings are found in the backup`);
  t.same(found(content, old).length, 0, 'none of the pre-rotation sealed or wrapped byte strings is in the backup');

  const restored = { ...f.env, DATA_DIR: tempDir(t, 'vault-restored-') };
  const rs = await runCli(['restore', '--in', file], restored);
  t.equal(rs.code, 0, rs.stderr);
  const back = { ...f, env: restored };
  await assertRefused(t, back, k1, 'the old root key on the restored backup');
  await assertKeysUnwrapOnlyWith(t, restored, k1, k2);
  await assertOpensWith(t, back, k2, 'the new root key on the restored backup');
});
