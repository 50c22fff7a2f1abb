// Migrations under an advisory lock: replicas starting together do not race; an
// unreachable database is waited for, then reported.
import postgres from 'postgres';
import t from 'tap';
import { waitForDatabase, type Sql } from '../../storage/db.js';
import { loadMigrations, migrate } from '../../storage/migrate.js';
import { freshDatabase } from '../helpers/db.js';

t.test('concurrent migrate from two "replicas" applies each migration once', async (t) => {
  const url = await freshDatabase(t);
  const a = postgres(url, { max: 2, onnotice: () => {} }) as unknown as Sql;
  const b = postgres(url, { max: 2, onnotice: () => {} }) as unknown as Sql;
  t.teardown(async () => {
    await a.end();
    await b.end();
  });
  const [ra, rb] = await Promise.all([migrate(a), migrate(b)]);
  const all = (await loadMigrations()).map((m) => m.version);
  t.same([...ra, ...rb].sort((x, y) => x - y), all, 'every migration applied by exactly one of them');
  const rows = await a`select version from schema_migrations order by version`;
  t.same(rows.map((r) => r.version), all);
  t.same(await migrate(a), [], 'a later start applies nothing');
});

t.test('waitForDatabase retries with backoff, then names the failure', async (t) => {
  const sql = postgres('postgres://nobody@127.0.0.1:1/none', { max: 1, connect_timeout: 1, onnotice: () => {} }) as unknown as Sql;
  t.teardown(() => sql.end({ timeout: 0 }));
  const retries: string[] = [];
  await t.rejects(waitForDatabase(sql, 1_000, (m) => retries.push(m)), /database unreachable after 1 s: ECONNREFUSED/);
  t.ok(retries.length >= 2, `retried ${retries.length} times`);
  t.match(retries[0], /retrying in 250 ms/);
  t.match(retries[1], /retrying in 500 ms/);
});

t.test('migration files are numbered without gaps', async (t) => {
  const ms = await loadMigrations();
  t.ok(ms.length >= 1);
  ms.forEach((m, i) => t.equal(m.version, i + 1));
});
