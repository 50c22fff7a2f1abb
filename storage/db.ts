// One SQL dialect: postgres.js talks either to a real PostgreSQL (DATABASE_URL) or to
// an embedded PGlite database in this process (embeddedLink.ts), through the same driver.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import postgres from 'postgres';
import { dumpLogical, loadLogical, parseBackup, type BackupManifest } from './backup.js';
import { diskFullMessage, diskGuard, type DiskGuard, type DiskState, type DiskLevel } from './diskGuard.js';
import { PgliteLink } from './embeddedLink.js';
import { loadMigrations, migrate } from './migrate.js';
import { certificateRefused, isCertificateError, postgresTls } from './tls.js';

export type Sql = postgres.Sql<Record<string, never>>;
export type Tx = postgres.TransactionSql<Record<string, never>>;
/** Either the pool or a transaction: storage functions accept both. */
export type Queryable = Sql | Tx;

export interface Database {
  sql: Sql;
  kind: 'postgres' | 'embedded';
  /**
   * Embedded only: a logical backup (storage/backup.ts: every table's live rows, never a
   * replaced one), taken on the pool's one connection, reserved (a transaction in flight
   * ends first, the next waits), in one snapshot. See docs/operations.md, backups.
   */
  backup?(): Promise<Uint8Array>;
  /**
   * Embedded only, when ConnectOptions.disk is given: the disk under DATA_DIR, looked at
   * on a timer and before every write (storage/diskGuard.ts).
   */
  disk?: DiskGuard;
  /** Embedded only, for restoreEmbedded: loads a logical backup into this database (migrated to its migrations). */
  load?(manifest: BackupManifest, data: Buffer[]): Promise<void>;
  close(): Promise<void>;
}

export interface ConnectOptions {
  databaseUrl?: string;
  /** DATABASE_CA_FILE: the CA that signs the server's certificate (see tls.ts for sslmode). */
  caFile?: string;
  dataDir: string;
  /** Max time to wait for an unreachable database before giving up. */
  waitMs?: number;
  log?: (msg: string) => void;
  poolSize?: number;
  /**
   * The service's request deadline: a connection attempt gives up within it, and a lost
   * connection is retried at most MAX_RECONNECT_DELAY_S apart, so a request never waits
   * on the driver much longer than the deadline it is raced against.
   */
  deadlineMs?: number;
  /**
   * Embedded only: guard the disk under `dataDir` (writes refused below `reserveBytes`,
   * `low` below `warnBytes`); a start with less than the reserve free is refused.
   */
  disk?: { reserveBytes: number; warnBytes: number; onChange?(state: DiskState, previous: DiskLevel | undefined): void };
}

/** postgres.js's default backoff grows to 20 s between attempts (requests hung 13–18 s): cap it. */
export const MAX_RECONNECT_DELAY_S = 1;
export function reconnectDelaySeconds(retries: number): number {
  return Math.min(0.05 * 2 ** retries, MAX_RECONNECT_DELAY_S);
}

const baseOptions: postgres.Options<Record<string, postgres.PostgresType>> = {
  onnotice: () => {},
  // int8 columns (folder versions, audit ids) stay far below 2^53: read them as numbers.
  types: {
    int8: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) },
  },
  // Column names to camelCase, and nothing else: postgres.camel would also rename the keys inside
  // every json value read (a JWT binding on `repository_owner` came back as `repositoryOwner`
  // and never matched GitHub's claim). JSON comes back exactly as it was stored.
  transform: { column: postgres.camel.column, undefined: null },
  connection: { application_name: 'vault-standalone' },
};

export async function connectDatabase(opts: ConnectOptions): Promise<Database> {
  if (opts.databaseUrl) return connectServer(opts.databaseUrl, opts);
  return connectEmbedded(opts);
}

async function connectServer(databaseUrl: string, opts: ConnectOptions): Promise<Database> {
  const { url, ssl } = postgresTls(databaseUrl, opts.caFile);
  const sql = postgres(url, {
    ...baseOptions,
    ssl,
    max: opts.poolSize ?? 10,
    idle_timeout: 60,
    connect_timeout: Math.max(1, Math.ceil((opts.deadlineMs ?? 10_000) / 1000)),
    backoff: reconnectDelaySeconds,
  }) as unknown as Sql;
  await waitForDatabase(sql, opts.waitMs ?? 180_000, opts.log);
  return { sql, kind: 'postgres', close: () => sql.end({ timeout: 5 }) };
}

/**
 * Waits with capped exponential backoff, so a first start while the database is still
 * coming up (the seed's CrashLoopBackOff) resolves itself instead of crash-looping.
 */
export async function waitForDatabase(sql: Sql, waitMs: number, log?: (msg: string) => void): Promise<void> {
  const deadline = Date.now() + waitMs;
  let delay = 250;
  for (;;) {
    try {
      await sql`select 1`;
      return;
    } catch (err) {
      // A refused certificate is the configuration's: waiting cannot fix it.
      if (isCertificateError(err)) throw new Error(certificateRefused('database', err));
      if (Date.now() + delay > deadline) {
        throw new Error(`database unreachable after ${Math.round(waitMs / 1000)} s: ${describe(err)}`);
      }
      log?.(`database not reachable yet (${describe(err)}); retrying in ${delay} ms`);
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 5_000);
    }
  }
}

function describe(err: unknown): string {
  const e = err as { code?: string; message?: string };
  return e.code ?? e.message ?? 'unknown error';
}

export class EmbeddedDatabaseInUseError extends Error {
  override readonly name = 'EmbeddedDatabaseInUseError';
}

/** Lock files this process holds: a second open in the same process is refused too. */
const heldLocks = new Set<string>();

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * PGlite takes no lock on its folder, and two processes writing the same files corrupt
 * them. Like PostgreSQL's postmaster.pid: the lock file names its owner; a lock whose
 * owner is gone (or is this pid in an earlier life, as PID 1 in a restarted container) is
 * taken over.
 */
async function lockEmbedded(dataDir: string, lockPath: string): Promise<() => Promise<void>> {
  const refuse = (who: string) =>
    new EmbeddedDatabaseInUseError(
      `the embedded database in ${dataDir} is in use by ${who}: it admits one process at a time ` +
        '(stop the service before running a command against it, or set DATABASE_URL)',
    );
  if (heldLocks.has(lockPath)) throw refuse('this process');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const file = await open(lockPath, 'wx', 0o600);
      await file.writeFile(`${process.pid}\n`);
      await file.close();
      heldLocks.add(lockPath);
      return async () => {
        heldLocks.delete(lockPath);
        await rm(lockPath, { force: true });
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const owner = Number.parseInt(await readFile(lockPath, 'utf8').catch(() => ''), 10);
    if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && isAlive(owner)) throw refuse(`process ${owner}`);
    await rm(lockPath, { force: true });
  }
  throw refuse('another process starting at the same moment');
}

/**
 * PostgreSQL settings of the embedded database, on top of PGlite's own start parameters.
 * initdb writes shared_buffers = 128MB and max_connections = 100 into postgresql.conf:
 * PGlite allocates (and touches) that shared memory inside its WebAssembly heap, which
 * was most of the service's resident memory. One backend serves one connection here,
 * and the files stay in the OS page cache behind the smaller buffer pool (2 MB: the
 * pool is touched whole at start; 8 MB cost ~8 MB of RSS, and the bench's 10k rows did
 * not read faster with it).
 */
export const EMBEDDED_SETTINGS = ['-c', 'shared_buffers=2MB', '-c', 'max_connections=5', ...walBounds(), ...durability()];

/**
 * PGlite runs PostgreSQL as a single backend without a checkpointer: no checkpoint ever
 * starts by itself, so pg_wal grew by a 16 MB segment per 16 MB written, for as long as the
 * process ran (measured: 7 segments after 100 MB of rows, none removed). The service
 * checkpoints (see checkpointWhenDue) once this much WAL is written; min_wal_size keeps
 * two recycled segments instead of five.
 */
function walBounds(): string[] {
  return ['-c', 'min_wal_size=32MB', '-c', 'max_wal_size=64MB'];
}

/** WAL written since the last checkpoint that makes the embedded database checkpoint (two segments). */
export const CHECKPOINT_WAL_BYTES = 32 * 1048576;
/** How often the embedded database's WAL since the last checkpoint is looked at. */
export const CHECKPOINT_POLL_MS = 10_000;

/**
 * Durability: PGlite's default start parameters carry `-F` (fsync off); these come after
 * it and win, so a commit returns only once its WAL is forced to disk (fdatasync of the
 * segment) and a checkpoint fsyncs the files it wrote. PGlite's file layer does nothing
 * for fsync/fdatasync as shipped: patches/@electric-sql+pglite+*.patch makes it call the
 * real ones on the host file (checked at start, assertSyncingFileLayer).
 */
function durability(): string[] {
  return ['-c', 'fsync=on', '-c', 'wal_sync_method=fdatasync', '-c', 'synchronous_commit=on', '-c', 'full_page_writes=on'];
}

/** Refuses to run on a PGlite whose file layer would drop the syncs (the patch not applied). */
function assertSyncingFileLayer(db: { Module: { FS: { filesystems: Record<string, { stream_ops?: Record<string, unknown> }> } } }): void {
  if (typeof db.Module.FS.filesystems.NODEFS?.stream_ops?.fsync !== 'function') {
    throw new Error(
      "PGlite's file layer does not sync to disk (patches/@electric-sql+pglite is not applied: run `npx patch-package`); refusing to run the embedded database without durability",
    );
  }
}

/** fsync every file and folder under `dir` (and `dir` itself): for files written outside PostgreSQL (initdb's copy, a restore). */
async function syncTree(dir: string): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await syncTree(path);
    else if (entry.isFile()) await syncPath(path);
  }
  await syncPath(dir);
}

async function syncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * initdb for a new embedded database, in a child process: PGlite runs initdb in a second
 * instance and keeps a dump of the new folder in memory. Done in this process (or a
 * thread of it), most of that memory stayed resident for the service's life (an idle
 * service runs no full GC, and glibc keeps a thread's freed memory).
 */
async function initEmbedded(dbDir: string): Promise<void> {
  const { execFile } = await import('node:child_process');
  const source = `
    const [url, dbDir, settings] = JSON.parse(process.argv[1]);
    const { PGlite } = await import(url);
    const db = await PGlite.create(dbDir, { startParams: [...PGlite.defaultStartParams, ...settings] });
    await db.close();`;
  const args = JSON.stringify([import.meta.resolve('@electric-sql/pglite'), dbDir, EMBEDDED_SETTINGS]);
  await new Promise<void>((resolveInit, reject) => {
    execFile(process.execPath, ['--liftoff-only', '--input-type=module', '-e', source, args], { env: {}, maxBuffer: 1 << 20 }, (err, _out, stderr) =>
      err ? reject(new Error(`embedded database initialisation failed: ${err.message} ${stderr.slice(0, 2000)}`)) : resolveInit(),
    );
  });
}

async function connectEmbedded(opts: ConnectOptions): Promise<Database> {
  // PGlite's WebAssembly runs on V8's baseline compiler only: its optimising tier-up
  // compiled hot PostgreSQL functions on background threads whose freed compiler memory
  // glibc keeps (~70 MB resident for the process's life), for no gain measured here
  // (bench/README.md, RSS). Set before the module is compiled; process-wide, and only
  // PGlite runs WebAssembly in this service.
  setFlagsFromString('--liftoff-only');
  const { PGlite } = await import('@electric-sql/pglite');
  const dataDir = resolve(opts.dataDir);
  const dbDir = join(dataDir, 'pglite');
  const sockDir = join(dataDir, 'run');
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  // Before anything is written: on a full disk PGlite's start ends in "Aborted()" (issue 31).
  const disk = opts.disk ? diskGuard({ dir: dataDir, ...opts.disk }) : undefined;
  if (disk) {
    const state = await disk.refresh().catch((err: unknown) => {
      disk.stop();
      throw err;
    });
    if (state.level === 'full') {
      disk.stop();
      throw new Error(`cannot start: ${diskFullMessage(dataDir, state.freeBytes, disk.reserveBytes)} and start again`);
    }
  }
  try {
    await mkdir(dbDir, { recursive: true, mode: 0o700 });
    await mkdir(sockDir, { recursive: true, mode: 0o700 });
  } catch (err) {
    disk?.stop();
    throw err;
  }
  const unlock = await lockEmbedded(dataDir, join(sockDir, 'embedded.pid')).catch((err: unknown) => {
    disk?.stop();
    throw err;
  });
  let db: InstanceType<typeof PGlite> | undefined;
  try {
    // Left by a version that served the database on a socket here (the lock says it is not live).
    await rm(join(sockDir, '.s.PGSQL.5432'), { force: true });
    // A first start runs initdb: in a thread of its own, whose memory (a second PGlite
    // instance and initdb's, ~450 MB) goes away with the thread.
    if (!existsSync(join(dbDir, 'PG_VERSION'))) {
      await initEmbedded(dbDir);
      // initdb's folder is copied in by PGlite, not written through PostgreSQL: synced here.
      await syncTree(dbDir);
      await syncPath(dataDir);
    }
    db = await PGlite.create(dbDir, { startParams: [...PGlite.defaultStartParams, ...EMBEDDED_SETTINGS] });
    assertSyncingFileLayer(db);
  } catch (err) {
    await db?.close().catch(() => {});
    await unlock();
    disk?.stop();
    throw err;
  }
  const pglite = db;
  // `socket` is postgres.js' documented custom socket ("a socket-like duplex stream"),
  // missing from its type declarations.
  const link = { socket: () => new PgliteLink(pglite) } as postgres.Options<Record<string, postgres.PostgresType>>;
  const sql = postgres({
    ...baseOptions,
    ...link,
    // PGlite has one backend: one connection, so transactions never interleave.
    database: 'postgres',
    username: 'postgres',
    max: 1,
    idle_timeout: 0,
  }) as unknown as Sql;
  // Checkpoints: nothing else starts one in PGlite (walBounds). Not on a full disk: a
  // checkpoint writes a WAL record, and the reserve is there for the WAL.
  const checkpoints = disk ? checkpointWhenDue(sql, disk) : undefined;
  const close = async () => {
    try {
      checkpoints?.stop();
      disk?.stop();
      await sql.end({ timeout: 5 });
      await pglite.close();
    } finally {
      await unlock();
    }
  };
  try {
    await waitForDatabase(sql, opts.waitMs ?? 30_000, opts.log);
  } catch (err) {
    await close().catch(() => {});
    throw err;
  }
  const backup = async (): Promise<Uint8Array> => {
    // The pool has one connection: reserving it waits for any transaction in flight to
    // end and keeps the next one out until the dump is taken.
    const reserved = await sql.reserve();
    try {
      return await dumpLogical(reserved);
    } finally {
      reserved.release();
    }
  };
  // Straight on PGlite: postgres.js' COPY FROM STDIN is not served over the in-process link.
  const load = (manifest: BackupManifest, data: Buffer[]) => loadLogical(pglite, manifest, data);
  return { sql, kind: 'embedded', backup, load, close, disk };
}

/**
 * Every CHECKPOINT_POLL_MS: when more than CHECKPOINT_WAL_BYTES of WAL was written since
 * the last checkpoint, CHECKPOINT (old segments are then recycled or removed), unless the
 * disk is below its reserve.
 */
function checkpointWhenDue(sql: Sql, disk: DiskGuard): { stop(): void } {
  let busy = false;
  const timer = setInterval(() => {
    if (busy || disk.state()?.level === 'full') return;
    busy = true;
    void (async () => {
      const [row] = await sql<{ since: number }[]>`select (pg_current_wal_insert_lsn() - redo_lsn)::int8 as since from pg_control_checkpoint()`;
      if ((row?.since ?? 0) > CHECKPOINT_WAL_BYTES) await sql`checkpoint`;
    })()
      .catch(() => {}) // the next poll tries again; a failing database is reported by readiness
      .finally(() => (busy = false));
  }, CHECKPOINT_POLL_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/**
 * Restores an embedded backup (backup()'s bytes, or an older version's copy of the
 * folder) into `dataDir`, which must not hold a database yet. The file is read and
 * checked whole first; the database is built in a private folder inside `dataDir` and
 * moved into place only once it opens and answers, so a failure leaves nothing behind
 * (not even the folders this call made). The folder is locked meanwhile, as a running
 * service locks it.
 */
export async function restoreEmbedded(dataDir: string, backup: Uint8Array): Promise<void> {
  const parsed = await parseBackup(backup);
  const root = resolve(dataDir);
  const dbDir = join(root, 'pglite');
  const sockDir = join(root, 'run');
  // What this call creates, removed again if it fails (mkdir returns the first folder it made).
  const madeRoot = await mkdir(root, { recursive: true, mode: 0o700 });
  const madeRun = existsSync(sockDir) ? undefined : await mkdir(sockDir, { recursive: true, mode: 0o700 });
  let done = false;
  try {
    const unlock = await lockEmbedded(root, join(sockDir, 'embedded.pid'));
    try {
      const existing = await readdir(dbDir).catch(() => [] as string[]);
      if (existing.length > 0) throw new EmbeddedDatabaseInUseError(`${dbDir} already holds a database: restore into an empty DATA_DIR`);
      const work = await mkdtemp(join(root, '.restore-'));
      try {
        if (parsed.kind === 'logical') await restoreLogical(work, parsed.manifest, parsed.data);
        else await restorePhysical(join(work, 'pglite'), parsed.gzipped);
        await syncTree(join(work, 'pglite'));
        await rename(join(work, 'pglite'), dbDir);
        await syncPath(root);
        done = true;
      } finally {
        await rm(work, { recursive: true, force: true });
      }
    } finally {
      await unlock();
    }
  } finally {
    // The lock's folder goes too (the service makes its own); a failure takes DATA_DIR if it made it.
    if (!done && madeRoot) await rm(madeRoot, { recursive: true, force: true });
    else if (madeRun) await rm(madeRun, { recursive: true, force: true });
  }
}

/** A fresh database in `work` (a DATA_DIR of its own), migrated to the backup's migrations, then loaded. */
async function restoreLogical(work: string, manifest: BackupManifest, data: Buffer[]): Promise<void> {
  const known = await loadMigrations();
  for (const m of manifest.migrations) {
    const mine = known[m.version - 1];
    if (!mine) throw new Error(`the backup was taken by a newer version (its migration ${m.version} ${m.name} is unknown here): restore it with that version or a later one`);
    if (mine.name !== m.name) throw new Error(`the backup's migration ${m.version} is ${m.name}, this version's is ${mine.name}: restore it with the version that took it`);
  }
  const db = await connectEmbedded({ dataDir: work, waitMs: 10_000 });
  try {
    await migrate(db.sql, known.slice(0, manifest.migrations.length));
    await db.load!(manifest, data);
  } finally {
    await db.close();
  }
}

/** An older version's backup: a gzipped tar of the PGlite folder, loaded as it is. */
async function restorePhysical(dbDir: string, gzipped: Uint8Array): Promise<void> {
  const { PGlite } = await import('@electric-sql/pglite');
  await mkdir(dbDir, { recursive: true, mode: 0o700 });
  const db = await PGlite.create(dbDir, { loadDataDir: new Blob([gzipped]) });
  try {
    // Opens the restored database once (recovery from the checkpoint happens here) and checks it answers.
    await db.query('select 1');
  } finally {
    await db.close();
  }
}
