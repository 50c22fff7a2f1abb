// Numbered, gap-free SQL migrations applied in one transaction under an advisory lock,
// so two replicas starting together never race. A migration never calls crypto/.
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Sql } from './db.js';

// Arbitrary but fixed: every replica must use the same lock id.
const MIGRATION_LOCK_ID = 74_820_113;

/** storage/migrations in the source tree (built code lives in dist/storage; tests may run from source). */
export const MIGRATIONS_DIR = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? './migrations/' : '../../storage/migrations/', import.meta.url));

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  const migrations: Migration[] = [];
  for (const [i, file] of files.entries()) {
    const m = /^(\d{4})_([a-z0-9_]+)\.sql$/.exec(file);
    if (!m) throw new Error(`migration file name not of the form NNNN_name.sql: ${file}`);
    const version = Number(m[1]);
    if (version !== i + 1) throw new Error(`migrations must be numbered without gaps: ${file}`);
    migrations.push({ version, name: m[2]!, sql: await readFile(`${dir}/${file}`, 'utf8') });
  }
  return migrations;
}

/** Returns the versions it applied. */
export async function migrate(sql: Sql, migrations?: Migration[]): Promise<number[]> {
  const all = migrations ?? (await loadMigrations());
  return sql.begin(async (tx) => {
    // Transaction-scoped: released on commit or rollback, even if this process dies.
    await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK_ID})`;
    await tx`create table if not exists schema_migrations (
      version integer primary key,
      name text not null,
      applied_at timestamptz not null default now()
    )`;
    const done = new Set((await tx<{ version: number }[]>`select version from schema_migrations`).map((r) => r.version));
    const applied: number[] = [];
    for (const m of all) {
      if (done.has(m.version)) continue;
      await tx.unsafe(m.sql);
      await tx`insert into schema_migrations (version, name) values (${m.version}, ${m.name})`;
      applied.push(m.version);
    }
    return applied;
  });
}
