// audit-verify with the service's key: ok on a seeded database, with the head printed
// for out-of-band records; an edited entry (also re-hashed), the newest entries
// removed, an edited anchor: exit 1, each named.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { AuditTrailError } from '../../../server/domain/audit.js';
import { auditIds, rechainWithSha256, restoreTrail, saveTrail } from '../../helpers/audit.js';
import { seedHomelab } from '../../helpers/service.js';
import { cliEnv, openServices, printedHead, runCli, withDatabase, type Backend } from './helpers.js';

for (const backend of ['postgres', 'embedded'] as Backend[]) {
  t.test(`ok with the head; then each kind of tampering is named (${backend})`, async (t) => {
    const env = await cliEnv(t, backend);
    const services = await openServices(t, env);
    await seedHomelab(services);
    await services.close();
    const { ids, last } = await withDatabase(env, async (sql) => {
      await saveTrail(sql, 'seeded');
      const all = await auditIds(sql);
      const [row] = await sql<{ hash: Buffer }[]>`select hash from audit_log where id = ${all.at(-1)!}`;
      return { ids: all, last: { id: all.at(-1)!, mac: row!.hash.toString('hex').slice(0, 16) } };
    });
    const n = ids.length;
    t.ok(n > 14, 'the seed wrote audit entries');

    const ok = await runCli(['audit-verify'], env);
    t.equal(ok.code, 0, ok.stderr);
    t.match(ok.stdout, new RegExp(`^audit chain ok: ${n} entries$`, 'm'));
    t.same(printedHead(ok.stdout), { entries: n, lastId: last.id, mac: last.mac }, 'the head: count, last id, MAC prefix');
    t.match(ok.stdout, `audit-verify --recorded-head ${last.id}:${last.mac}`);
    t.notMatch(ok.stdout, /written before the chain was keyed/, 'no legacy entries on a new database');
    t.notOk((ok.stdout + ok.stderr).includes(env.ENCRYPTION_KEY!), 'no key printed');

    await withDatabase(env, (sql) => sql`update audit_log set event_type = 'x' where id = ${ids[0]!}`);
    const edited = await runCli(['audit-verify'], env);
    t.equal(edited.code, 1);
    t.match(edited.stdout, new RegExp(`audit chain BROKEN at entry id ${ids[0]} \\(${n} entries walked\\)`));

    await withDatabase(env, async (sql) => {
      await restoreTrail(sql, 'seeded');
      await sql`update audit_log set secret_key = 'OTHER' where id = ${ids[3]!}`;
      await rechainWithSha256(sql, ids[3]!);
    });
    const rehashed = await runCli(['audit-verify'], env);
    t.equal(rehashed.code, 1, 'an edit with every later hash recomputed by plain SHA-256');
    t.match(rehashed.stdout, `audit chain BROKEN at entry id ${ids[3]} `);

    await withDatabase(env, async (sql) => {
      await restoreTrail(sql, 'seeded');
      await sql`delete from audit_log where id in ${sql(ids.slice(-2))}`;
    });
    const truncated = await runCli(['audit-verify'], env);
    t.equal(truncated.code, 1, 'the newest two entries deleted');
    t.match(
      truncated.stdout,
      `audit chain BROKEN at its end: the anchor records ${n} entries ending at id ${last.id}, ` +
        `the table holds ${n - 2} entries ending at id ${ids.at(-3)}`,
    );

    await withDatabase(env, async (sql) => {
      await restoreTrail(sql, 'seeded');
      await sql`update audit_chain_head set mac = ${randomBytes(32)}`;
    });
    const anchor = await runCli(['audit-verify'], env);
    t.equal(anchor.code, 1, 'the anchor edited');
    t.match(anchor.stdout, /audit chain BROKEN: the head anchor \(audit_chain_head\) was edited/);
    const refused = await openServices(t, env).then(
      (s) => s.close().then(() => null),
      (e: unknown) => e,
    );
    t.ok(refused instanceof AuditTrailError, 'and the service refuses to start on it');
    t.match((refused as Error).message, /head anchor \(table audit_chain_head\) does not verify/);
  });
}

t.test('a database the service never started on', async (t) => {
  const env = await cliEnv(t, 'postgres');
  const r = await runCli(['audit-verify'], env);
  t.equal(r.code, 1);
  t.match(r.stderr, /has no audit trail \(the service has never started on it\)/);
});
