// audit-verify needs the service's key, and only that one opens the audit key; a
// database with entries from before the chain was keyed verifies, those entries
// pinned by the anchor from then on.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { loadMigrations, migrate } from '../../../storage/migrate.js';
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
  // The schema and the rule of the version before: plain SHA-256 entries.
  await withDatabase(env, async (sql) => {
    await migrate(sql, (await loadMigrations()).slice(0, 2));
    for (let i = 0; i < 3; i++) {
      await sql`insert into audit_log (at, actor_type, actor_id, event_type, prev_hash, hash)
        values (${new Date(Date.now() + i)}, 'system', null, ${`before-${i}`}, ${Buffer.alloc(0)}, ${Buffer.alloc(0)})`;
    }
    await rechainWithSha256(sql, 0);
  });
  const services = await openServices(t, env);
  await services.projects.create(SYSTEM, { name: 'homelab' });
  await services.close();

  const r = await runCli(['audit-verify'], env);
  t.equal(r.code, 0, r.stdout + r.stderr);
  t.match(r.stdout, /of which 3 written before the chain was keyed/);

  await withDatabase(env, (sql) => sql`update audit_log set event_type = 'x' where event_type = 'before-1'`);
  const edited = await runCli(['audit-verify'], env);
  t.equal(edited.code, 1, 'an old entry edited afterwards is named');
  t.match(edited.stdout, /audit chain BROKEN at entry id 2 /);
});
