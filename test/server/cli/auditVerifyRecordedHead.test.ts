// audit-verify --recorded-head: a rollback of the whole trail with its anchor to an
// older copy verifies on its own (the documented limit), but not against a head
// recorded since; a head recorded before the copy is still found.
import t from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { restoreTrail, saveTrail } from '../../helpers/audit.js';
import { cliEnv, openServices, printedHead, runCli, withDatabase } from './helpers.js';

t.test('a rollback is caught only against a recorded head', async (t) => {
  const env = await cliEnv(t, 'postgres');
  const services = await openServices(t, env);
  await services.projects.create(SYSTEM, { name: 'homelab' });
  await services.close();
  await withDatabase(env, (sql) => saveTrail(sql, 'seeded'));
  const first = await runCli(['audit-verify'], env);
  t.equal(first.code, 0, first.stdout + first.stderr);
  const last = printedHead(first.stdout);

  const later = await openServices(t, env);
  await later.projects.create(SYSTEM, { name: 'later' });
  await later.close();
  const now = await runCli(['audit-verify'], env);
  t.equal(now.code, 0, now.stdout + now.stderr);
  const recorded = printedHead(now.stdout);
  t.ok(recorded.entries > last.entries);

  await withDatabase(env, (sql) => restoreTrail(sql, 'seeded'));
  const alone = await runCli(['audit-verify'], env);
  t.equal(alone.code, 0, 'the older copy verifies on its own (the documented limit)');
  const rolledBack = await runCli(['audit-verify', '--recorded-head', `${recorded.lastId}:${recorded.mac}`], env);
  t.equal(rolledBack.code, 1, 'but not against the head recorded since');
  t.match(rolledBack.stdout, /the recorded head is not in the chain .* rolled back to an older copy or replaced/);
  const earlier = await runCli(['audit-verify', '--recorded-head', `${last.lastId}:${last.mac.toUpperCase()}`], env);
  t.equal(earlier.code, 0, 'a head recorded before the copy is in it');
});

t.test('--recorded-head must be ID:MAC', async (t) => {
  const env = await cliEnv(t, 'postgres');
  for (const bad of ['12', '12:abc', 'x:0123456789abcdef', '12:0123456789abcdeg']) {
    const usage = await runCli(['audit-verify', '--recorded-head', bad], env);
    t.equal(usage.code, 2, `--recorded-head ${bad}: usage error`);
    t.match(usage.stderr, /--recorded-head must be ID:MAC/);
  }
});
