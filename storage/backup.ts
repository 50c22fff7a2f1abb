// Logical backups of the embedded database: every table's current rows (COPY text
// format), its sequences and the migrations it is at, in one gzip stream.
//
// Why logical and not a copy of the database folder: a physical copy holds what the
// folder holds, and PostgreSQL does not erase what it replaces. After `rotate-key` and
// `rekey`, the old wrapped data keys and the old ciphertext stay in dead tuples and free
// space of the table files until rewritten, in WAL segments (a checkpoint recycles a
// segment by renaming it, its bytes stay until overwritten) and in full-page images. A
// VACUUM FULL, a CHECKPOINT and a WAL switch narrow that, but leave recycled segments
// and depend on storage internals no test can enumerate. A COPY of every table reads
// only live rows in one snapshot: a backup taken after a rotation holds exactly what the
// database holds now, never a retired key or ciphertext
// (test/server/cli/backupRotation.test.ts). It is also independent of PGlite's on-disk
// format, and restores by the same migrations a fresh install runs.
//
// Format: gzip of
//   "vault-standalone logical backup 1\n"
//   one line of JSON, the manifest (BackupManifest)
//   each table's COPY text data in manifest order, exactly `bytes` bytes each.
// Older versions wrote a gzipped tar of the folder (PGlite's dumpDataDir): restore still
// reads those (parseBackup says which).
import { promisify } from 'node:util';
import { gunzip as gunzipCb, gzip as gzipCb } from 'node:zlib';
import type postgres from 'postgres';

const gzip = promisify(gzipCb);
const gunzip = promisify(gunzipCb);

export const LOGICAL_MAGIC = 'vault-standalone logical backup 1\n';
const MAX_MANIFEST = 16 << 20;

export interface BackupTable {
  name: string;
  columns: string[];
  rows: number;
  bytes: number;
}

export interface BackupManifest {
  format: 1;
  /** schema_migrations at the time of the backup: a restore applies exactly these first. */
  migrations: Array<{ version: number; name: string }>;
  tables: BackupTable[];
  sequences: Array<{ name: string; lastValue: string; isCalled: boolean }>;
}

export type ParsedBackup =
  | { kind: 'logical'; manifest: BackupManifest; data: Buffer[] }
  /** A gzipped tar of a PGlite folder (backups of older versions): loaded as it is. */
  | { kind: 'physical'; gzipped: Uint8Array };

/** A backup file that is not one, or is damaged: its message is one line for the operator. */
export class BackupFormatError extends Error {
  override readonly name = 'BackupFormatError';
}

export const quoteIdent = (s: string) => `"${s.replaceAll('"', '""')}"`;

/** The tables of the schema (every ordinary table in public) with their copyable columns, by name. */
const TABLES_SQL = `select c.relname::text as name,
    array_agg(a.attname::text order by a.attnum) as columns
  from pg_class c
  join pg_namespace n on n.oid = c.relnamespace
  join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
  where n.nspname = 'public' and c.relkind = 'r'
  group by c.relname
  order by c.relname`;

const SEQUENCES_SQL = `select c.relname::text as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
  where n.nspname = 'public' and c.relkind = 'S' order by c.relname`;

/**
 * Dumps every table on `conn` (a reserved connection: nothing else runs on it meanwhile)
 * in one repeatable-read snapshot. Returns the backup's bytes (gzip).
 */
export async function dumpLogical(conn: postgres.ReservedSql<Record<string, never>>): Promise<Uint8Array> {
  await conn`begin isolation level repeatable read read only`;
  let manifest: BackupManifest;
  const data: Buffer[] = [];
  try {
    const [known] = await conn<{ ok: boolean }[]>`select to_regclass('public.schema_migrations') is not null as ok`;
    if (!known!.ok) throw new Error('the database holds no vault-standalone schema (no migrations applied)');
    const migrations = await conn<{ version: number; name: string }[]>`select version, name from schema_migrations order by version`;
    const tables = await conn.unsafe<{ name: string; columns: string[] }[]>(TABLES_SQL);
    const entries: BackupTable[] = [];
    for (const t of tables) {
      const chunks: Buffer[] = [];
      const stream = await conn.unsafe(`copy ${quoteIdent(t.name)} (${t.columns.map(quoteIdent).join(', ')}) to stdout`).readable();
      for await (const c of stream) chunks.push(c as Buffer);
      const bytes = Buffer.concat(chunks);
      data.push(bytes);
      // COPY's text format escapes newlines inside values: one line per row.
      let rows = 0;
      for (let i = bytes.indexOf(10); i !== -1; i = bytes.indexOf(10, i + 1)) rows++;
      entries.push({ name: t.name, columns: [...t.columns], rows, bytes: bytes.length });
    }
    const sequences: BackupManifest['sequences'] = [];
    for (const s of await conn.unsafe<{ name: string }[]>(SEQUENCES_SQL)) {
      const [v] = await conn.unsafe<{ lastValue: string; isCalled: boolean }[]>(`select last_value::text as last_value, is_called from ${quoteIdent(s.name)}`);
      sequences.push({ name: s.name, lastValue: v!.lastValue, isCalled: v!.isCalled });
    }
    manifest = { format: 1, migrations: migrations.map((m) => ({ version: m.version, name: m.name })), tables: entries, sequences };
  } finally {
    await conn`commit`;
  }
  const head = Buffer.from(`${LOGICAL_MAGIC}${JSON.stringify(manifest)}\n`);
  return new Uint8Array(await gzip(Buffer.concat([head, ...data])));
}

const isName = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= 63;
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

function checkManifest(m: unknown): BackupManifest {
  const bad = (what: string) => new BackupFormatError(`the backup's manifest is malformed (${what})`);
  const o = m as Partial<BackupManifest> | null;
  if (typeof o !== 'object' || o === null || o.format !== 1) throw bad('format');
  if (!Array.isArray(o.migrations) || !o.migrations.every((x, i) => x?.version === i + 1 && isName(x.name))) throw bad('migrations');
  if (!Array.isArray(o.tables) || !o.tables.every((x) => isName(x?.name) && Array.isArray(x.columns) && x.columns.length > 0 && x.columns.every(isName) && isCount(x.rows) && isCount(x.bytes)))
    throw bad('tables');
  if (new Set(o.tables.map((x) => x.name)).size !== o.tables.length) throw bad('a table twice');
  if (!Array.isArray(o.sequences) || !o.sequences.every((x) => isName(x?.name) && typeof x.lastValue === 'string' && /^-?\d{1,19}$/.test(x.lastValue) && typeof x.isCalled === 'boolean'))
    throw bad('sequences');
  return o as BackupManifest;
}

/**
 * Reads a backup file entirely, before anything is written: not gzip, cut short or
 * damaged (gzip's CRC and length), an unknown content or a manifest that does not add
 * up is a BackupFormatError.
 */
export async function parseBackup(file: Uint8Array): Promise<ParsedBackup> {
  if (file.length < 18 || file[0] !== 0x1f || file[1] !== 0x8b) {
    throw new BackupFormatError('not a vault-standalone backup (not gzip data)');
  }
  let raw: Buffer;
  try {
    raw = await gunzip(file);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why = e.code === 'Z_BUF_ERROR' ? 'it is cut short' : `it is damaged: ${e.message}`;
    throw new BackupFormatError(`cannot read the backup: ${why}`);
  }
  if (raw.subarray(0, LOGICAL_MAGIC.length).toString('latin1') === LOGICAL_MAGIC) {
    const start = LOGICAL_MAGIC.length;
    const nl = raw.indexOf(10, start);
    if (nl === -1 || nl - start > MAX_MANIFEST) throw new BackupFormatError("the backup's manifest is malformed (no end)");
    let json: unknown;
    try {
      json = JSON.parse(raw.subarray(start, nl).toString('utf8'));
    } catch {
      throw new BackupFormatError("the backup's manifest is malformed (not JSON)");
    }
    const manifest = checkManifest(json);
    const data: Buffer[] = [];
    let at = nl + 1;
    for (const t of manifest.tables) {
      if (at + t.bytes > raw.length) throw new BackupFormatError(`the backup is incomplete: table ${t.name} is cut short`);
      data.push(raw.subarray(at, at + t.bytes));
      at += t.bytes;
    }
    if (at !== raw.length) throw new BackupFormatError('the backup holds more data than its manifest lists');
    return { kind: 'logical', manifest, data };
  }
  // A tar archive: "ustar" at offset 257 of its first header.
  if (raw.length >= 512 && raw.subarray(257, 262).toString('latin1') === 'ustar') return { kind: 'physical', gzipped: file };
  throw new BackupFormatError('not a vault-standalone backup (unknown content)');
}

/** What loadLogical needs of a PGlite instance (its COPY FROM reads the blob as a file). */
export interface PgliteLoader {
  exec(query: string): Promise<unknown>;
  query<T>(query: string, params?: unknown[], options?: { blob?: Blob }): Promise<{ rows: T[] }>;
}

/**
 * Loads a logical backup into a database just migrated to exactly the backup's
 * migrations: the table set and columns must match, every table is emptied (migrations
 * may seed rows) and loaded, sequences are set, and every foreign key is checked once
 * the whole is in (loaded with triggers off, so the order of tables does not matter).
 * One transaction: all or nothing.
 */
export async function loadLogical(pg: PgliteLoader, manifest: BackupManifest, data: Buffer[]): Promise<void> {
  await pg.exec('begin');
  try {
    const have = (await pg.query<{ name: string; columns: string[] }>(TABLES_SQL)).rows;
    const want = new Map(manifest.tables.map((t) => [t.name, t]));
    const mismatch = have.length !== want.size || have.some((h) => want.get(h.name)?.columns.slice().sort().join(',') !== h.columns.slice().sort().join(','));
    if (mismatch) throw new BackupFormatError("the backup's tables do not match the schema of its migrations");
    await pg.exec('set local session_replication_role = replica');
    await pg.exec(`truncate ${have.map((h) => quoteIdent(h.name)).join(', ')}`);
    for (const [i, t] of manifest.tables.entries()) {
      if (t.bytes === 0) continue;
      await pg.query(`copy ${quoteIdent(t.name)} (${t.columns.map(quoteIdent).join(', ')}) from '/dev/blob'`, [], { blob: new Blob([data[i]!]) });
    }
    for (const t of manifest.tables) {
      const [n] = (await pg.query<{ n: number }>(`select count(*)::int as n from ${quoteIdent(t.name)}`)).rows;
      if (n!.n !== t.rows) throw new BackupFormatError(`the backup is damaged: table ${t.name} loaded ${n!.n} rows, its manifest says ${t.rows}`);
    }
    const sequences = new Set((await pg.query<{ name: string }>(SEQUENCES_SQL)).rows.map((r) => r.name));
    for (const s of manifest.sequences) {
      if (!sequences.has(s.name)) throw new BackupFormatError(`the backup names a sequence the schema lacks: ${s.name}`);
      await pg.query(`select setval($1::regclass, $2::bigint, $3)`, [quoteIdent(s.name), s.lastValue, s.isCalled]);
    }
    await pg.exec('set local session_replication_role = origin');
    await checkForeignKeys(pg);
    await pg.exec('commit');
  } catch (err) {
    await pg.exec('rollback').catch(() => {});
    throw err;
  }
}

/** Every foreign key of the schema holds (MATCH SIMPLE: a row with a null in the key is not checked). */
async function checkForeignKeys(pg: PgliteLoader): Promise<void> {
  const fks = (
    await pg.query<{ name: string; child: string; parent: string; childCols: string[]; parentCols: string[] }>(`
    select c.conname::text as name, cl.relname::text as child, pl.relname::text as parent,
      array(select a.attname::text from unnest(c.conkey) with ordinality k(n, i)
            join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.n order by k.i) as "childCols",
      array(select a.attname::text from unnest(c.confkey) with ordinality k(n, i)
            join pg_attribute a on a.attrelid = c.confrelid and a.attnum = k.n order by k.i) as "parentCols"
    from pg_constraint c
    join pg_class cl on cl.oid = c.conrelid
    join pg_class pl on pl.oid = c.confrelid
    join pg_namespace n on n.oid = cl.relnamespace
    where c.contype = 'f' and n.nspname = 'public'`)
  ).rows;
  for (const fk of fks) {
    const notNull = fk.childCols.map((c) => `c.${quoteIdent(c)} is not null`).join(' and ');
    const match = fk.childCols.map((c, i) => `p.${quoteIdent(fk.parentCols[i]!)} = c.${quoteIdent(c)}`).join(' and ');
    const [r] = (
      await pg.query<{ n: number }>(
        `select count(*)::int as n from ${quoteIdent(fk.child)} c where ${notNull} and not exists (select 1 from ${quoteIdent(fk.parent)} p where ${match})`,
      )
    ).rows;
    if (r!.n > 0) throw new BackupFormatError(`the backup is inconsistent: ${r!.n} rows of ${fk.child} break ${fk.name}`);
  }
}
