// rotate-key and the audit chain: the audit key is re-wrapped with the others, and the
// rotation's own entry must extend a chain whose anchor verifies under the new key
// alone; an edited anchor stops the rotation, and nothing changes.
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import t from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { cliEnv, openServices, runCli } from './helpers.js';

t.test('an edited audit anchor: the rotation cannot be audited, so nothing changes', async (t) => {
  const env = await cliEnv(t, 'postgres');
  const services = await openServices(t, env);
  await services.projects.create(SYSTEM, { name: 'homelab' });
  await services.close();
  const sql = postgres(env.DATABASE_URL!, { max: 1, onnotice: () => {} });
  t.teardown(() => sql.end());
  const keys = async () => (await sql`select id, root_key_version, wrapped from crypto_keys order by id`).map((r) => JSON.stringify(r));
  const before = await keys();
  t.ok((await sql`select 1 from crypto_keys where purpose = 'audit'`).length === 1, 'an audit key exists to be re-wrapped');

  await sql`update audit_chain_head set entries = entries + 1`;
  const next = randomBytes(16).toString('hex');
  const refused = await runCli(['rotate-key'], { ...env, NEW_ENCRYPTION_KEY: next });
  t.equal(refused.code, 1);
  t.match(refused.stderr, /rotation failed and was rolled back: the audit chain head anchor does not verify/);
  t.same(await keys(), before, 'every key still wrapped as before');

  await sql`update audit_chain_head set entries = entries - 1`;
  const rotated = await runCli(['rotate-key'], { ...env, NEW_ENCRYPTION_KEY: next });
  t.equal(rotated.code, 0, rotated.stderr);
  t.match(rotated.stdout, /data keys re-wrapped: 3 \(1 system, 1 audit, 1 project\)/);
  const verified = await runCli(['audit-verify'], { ...env, ENCRYPTION_KEY: next });
  t.equal(verified.code, 0, verified.stdout + verified.stderr);
  const old = await runCli(['audit-verify'], env);
  t.equal(old.code, 1, 'the old key no longer opens it');
  t.match(old.stderr, /ENCRYPTION_KEY does not match the key this database was encrypted with/);
});
