// audit-verify: ok on a seeded database; a tampered entry is named by id (exit 1).
import t from 'tap';
import { seedHomelab } from '../../helpers/service.js';
import { cliEnv, openServices, runCli, type Backend } from './helpers.js';

for (const backend of ['postgres', 'embedded'] as Backend[]) {
  t.test(`ok on a seeded database, then the first tampered entry by id (${backend})`, async (t) => {
    const env = await cliEnv(t, backend);
    let services = await openServices(t, env);
    await seedHomelab(services);
    const [count] = await services.db.sql<{ n: number }[]>`select count(*)::int as n from audit_log`;
    const n = count!.n;
    t.ok(n > 14, 'the seed wrote audit entries');
    await services.close();

    // No key needed: audit-verify reads the database only.
    const { ENCRYPTION_KEY: _k, AUTH_SECRET: _a, ...noKeys } = env;
    const ok = await runCli(['audit-verify'], noKeys);
    t.equal(ok.code, 0, ok.stderr);
    t.equal(ok.stdout.trim(), `audit chain ok: ${n} entries`);

    services = await openServices(t, env);
    const [tampered] = await services.db.sql<{ id: number }[]>`update audit_log set event_type = 'x'
      where id = (select min(id) from audit_log) returning id`;
    const id = tampered!.id;
    await services.close();

    const broken = await runCli(['audit-verify'], noKeys);
    t.equal(broken.code, 1);
    t.match(broken.stdout, new RegExp(`audit chain BROKEN at entry id ${id} \\(${n} entries walked\\)`));
  });
}

t.test('a database the service never started on', async (t) => {
  const env = await cliEnv(t, 'postgres');
  const r = await runCli(['audit-verify'], env);
  t.equal(r.code, 1);
  t.match(r.stderr, /has no audit trail \(the service has never started on it\)/);
});
