// The embedded database admits one process: its lock file refuses a second opener while
// the owner lives, is taken over when the owner is gone, and is released on close. And
// the test suite's copied PGlite template (test/helpers/embedded.ts) is what a first
// open of an empty folder makes: it migrates to the same database.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { connectDatabase, EmbeddedDatabaseInUseError } from '../../storage/db.js';
import { migrate } from '../../storage/migrate.js';
import { seedEmbeddedDataDir } from '../helpers/embedded.js';

function dataDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'vault-db-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const lockFile = (dir: string) => join(dir, 'run', 'embedded.pid');

/** A process that is running until the test ends. */
function liveProcess(t: Test): number {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' });
  t.teardown(() => child.kill('SIGKILL'));
  return child.pid!;
}

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((done) => child.once('exit', done));
  return child.pid!;
}

t.test('open: the lock names this process; close releases it; a reopen works', async (t) => {
  const dir = dataDir(t);
  const db = await connectDatabase({ dataDir: dir });
  t.equal(readFileSync(lockFile(dir), 'utf8').trim(), String(process.pid));
  await db.sql`create table kept (n int)`;
  await db.close();
  t.notOk(existsSync(lockFile(dir)), 'released on close');
  const again = await connectDatabase({ dataDir: dir });
  t.teardown(() => again.close());
  t.same(await again.sql`select count(*)::int as n from kept`, [{ n: 0 }], 'same database');
});

t.test('a second open in the same process is refused, the first keeps working', async (t) => {
  const dir = await seedEmbeddedDataDir(dataDir(t));
  const db = await connectDatabase({ dataDir: dir });
  t.teardown(() => db.close());
  await t.rejects(connectDatabase({ dataDir: dir }), EmbeddedDatabaseInUseError);
  await t.rejects(connectDatabase({ dataDir: dir }), /is in use by this process: it admits one process at a time/);
  t.same(await db.sql`select 1 as one`, [{ one: 1 }]);
  t.equal(readFileSync(lockFile(dir), 'utf8').trim(), String(process.pid), 'the lock is still the first opener\'s');
});

t.test('a lock held by another live process is refused and left alone', async (t) => {
  const dir = dataDir(t);
  const owner = liveProcess(t);
  mkdirSync(join(dir, 'run'), { recursive: true });
  writeFileSync(lockFile(dir), `${owner}\n`);
  await t.rejects(connectDatabase({ dataDir: dir }), new RegExp(`is in use by process ${owner}`));
  t.equal(readFileSync(lockFile(dir), 'utf8').trim(), String(owner), 'not taken over');
  t.notOk(existsSync(join(dir, 'run', '.s.PGSQL.5432')), 'no socket was opened');
});

t.test('a lock left by a process that is gone, or unreadable, is taken over', async (t) => {
  for (const content of [`${await deadPid()}\n`, 'garbage', '']) {
    const dir = await seedEmbeddedDataDir(dataDir(t));
    mkdirSync(join(dir, 'run'), { recursive: true });
    writeFileSync(lockFile(dir), content);
    const db = await connectDatabase({ dataDir: dir });
    t.equal(readFileSync(lockFile(dir), 'utf8').trim(), String(process.pid), `stale lock ${JSON.stringify(content)} taken over`);
    await db.close();
  }
});

t.test('memory: the embedded database runs with the small buffer pool and connection table it is sized for', async (t) => {
  const dir = dataDir(t);
  // A first open: initdb runs in a child process, then this process opens the new folder.
  const db = await connectDatabase({ dataDir: dir });
  t.teardown(() => db.close());
  t.ok(existsSync(join(dir, 'pglite', 'PG_VERSION')), 'initialised');
  const [row] = await db.sql<{ sb: string; mc: string }[]>`select current_setting('shared_buffers') as sb, current_setting('max_connections') as mc`;
  t.same(row, { sb: '2MB', mc: '5' });
});

t.test('the test template: a copy opens and migrates to the same database as an empty folder', async (t) => {
  const describe = async (dir: string) => {
    const db = await connectDatabase({ dataDir: dir });
    try {
      const applied = await migrate(db.sql);
      const columns = await db.sql`select table_name, column_name, data_type, is_nullable, column_default
        from information_schema.columns where table_schema = 'public' order by table_name, ordinal_position`;
      const indexes = await db.sql`select indexname, indexdef from pg_indexes where schemaname = 'public' order by indexname`;
      const settings = await db.sql`select name, setting from pg_settings
        where name in ('server_version', 'server_encoding', 'lc_collate', 'lc_ctype', 'TimeZone', 'data_checksums') order by name`;
      const databases = await db.sql`select datname, encoding, datcollate from pg_database order by datname`;
      return { applied, columns, indexes, settings, databases };
    } finally {
      await db.close();
    }
  };
  const empty = await describe(dataDir(t));
  const copied = await describe(await seedEmbeddedDataDir(dataDir(t)));
  t.ok(empty.applied.length > 0 && empty.columns.length > 0, 'the empty folder got the schema');
  t.same(copied, empty, 'every migration applied, same columns, indexes, settings and databases');
});

t.test('column names come back camelCased; keys inside json values exactly as stored', async (t) => {
  const dir = await seedEmbeddedDataDir(dataDir(t));
  const db = await connectDatabase({ dataDir: dir });
  t.teardown(() => db.close());
  const [row] = await db.sql<{ someColumn: number; claims: Record<string, unknown> }[]>`select 1 as some_column, '{"repository_owner":"acme","nested":{"job_workflow_ref":"x"}}'::jsonb as claims`;
  t.equal(row!.someColumn, 1);
  t.same(row!.claims, { repository_owner: 'acme', nested: { job_workflow_ref: 'x' } });
});
