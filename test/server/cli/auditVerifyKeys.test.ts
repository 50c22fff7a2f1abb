// audit-verify needs the service's key, and only that one opens the audit key; a
// database with entries from before the chain was keyed verifies, those entries
// pinned by the anchor from then on.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { createCrypto } from '../../../crypto/index.js';
import { dataKeyAad } from '../../../server/domain/keyring.js';
import { rechainWithSha256 } from '../../helpers/audit.js';
import { cliEnv, openServices, runCli, withDatabase } from './helpers.js';

t.test('the key is needed, and must be the database\'s', async (t) => {
  const env = await cliEnv(t, 'postgres');
  const services = await openServices(t, env);
  await services.projects.create(SYSTEM, { name: 'homelab' });
  await services.close();

  const { ENCRYPTION_KEY: _k, ...noKey } = env;
  const without = await runCli(['audit-verify'], noKey);
  t.equal(without.code, 1);
  t.match(without.stderr, /ENCRYPTION_KEY is not set/);

  const wrong = await runCli(['audit-verify'], { ...env, ENCRYPTION_KEY: randomBytes(16).toString('hex') });
  t.equal(wrong.code, 1);
  t.match(wrong.stderr, /ENCRYPTION_KEY does not match the key this database was encrypted with/);
});

t.test('a database with entries from before the chain was keyed', async (t) => {
  const env = await cliEnv(t, 'postgres');
  // The state the version before the keyed chain left: its first-version canary (sealed
  // with the root key, which that version held), a plain SHA-256 trail, no anchor, no
  // audit key. A fresh instance never accepts such entries (test/server/domain/
  // integrity.test.ts); an upgrade records them once, under the key.
  let services = await openServices(t, env);
  await services.projects.create(SYSTEM, { name: 'homelab' });
  await services.close();
  const crypto = await createCrypto({ encryptionKeyHex: env.ENCRYPTION_KEY!, threads: 1 });
  t.teardown(() => crypto.close());
  await withDatabase(env, async (sql) => {
    const [sys] = await sql<{ id: string; wrapped: Buffer }[]>`select k.id, k.wrapped from crypto_canary c join crypto_keys k on k.id = c.key_id`;
    const [v1] = await crypto.sealMany(sys!.wrapped, dataKeyAad(sys!.id), [{ plaintext: 'vault-standalone canary v1', aad: 'vault-standalone:canary:v1' }]);
    await sql`update crypto_canary set blob = ${v1!}`;
    await sql`delete from audit_log`;
    await sql`delete from audit_chain_head`;
    await sql`delete from crypto_keys where purpose = 'audit'`;
    for (let i = 0; i < 3; i++) {
      await sql`insert into audit_log (at, actor_type, actor_id, event_type, prev_hash, hash, chain)
        values (${new Date(Date.now() + i)}, 'system', null, ${`before-${i}`}, ${Buffer.alloc(0)}, ${Buffer.alloc(0)}, 1)`;
    }
    await rechainWithSha256(sql, 0, { markLegacy: true });
  });
  // The upgrade: the first start of this version records the legacy part.
  services = await openServices(t, env);
  await services.projects.create(SYSTEM, { name: 'after' });
  await services.close();

  const r = await runCli(['audit-verify'], env);
  t.equal(r.code, 0, r.stdout + r.stderr);
  t.match(r.stdout, /of which 3 written before the chain was keyed/);

  await withDatabase(env, (sql) => sql`update audit_log set event_type = 'x' where event_type = 'before-1'`);
  const edited = await runCli(['audit-verify'], env);
  t.equal(edited.code, 1, 'an old entry edited afterwards is named');
  t.match(edited.stdout, /audit chain BROKEN at entry id \d+ /);
});
