// backup / restore of the embedded database. A running service is asked over its local
// admin channel (the folder admits one process); a stopped one is opened directly.
// PostgreSQL (DATABASE_URL): pg_dump / pg_restore, see docs/operations.md.
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connectDatabase, restoreEmbedded } from '../../storage/db.js';
import { adminSocketPath, requestBackup } from '../adminChannel.js';
import { CliError, EXIT_OK, UsageError, callerPath, parse, type Command, type Context } from './command.js';
import { databaseTarget } from './database.js';

const PG_HINT = 'DATABASE_URL is set: back PostgreSQL up with pg_dump and restore with pg_restore (docs/operations.md, backups)';

const BACKUP_HELP = `Usage: vault-standalone backup --out FILE

Writes a backup of the embedded database in DATA_DIR to FILE (mode 0600): every
table's live rows in one snapshot (gzip; no replaced row, so a backup taken after
rotate-key and rekey holds nothing the retired keys open). While the service runs, it
is asked over its admin socket (DATA_DIR/run/admin.sock) and reads the tables between
two transactions; otherwise the folder is opened directly.

The backup holds ciphertext, wrapped data keys and the audit trail, never ENCRYPTION_KEY:
keep the key (or data/dev-keys.env) backed up separately; without it the backup is useless.

Options:
  --out FILE   where to write the backup (refused if it exists)
  -h, --help   this help

Exit codes: 0 the backup is written; 1 failure, nothing written (FILE exists,
DATABASE_URL is set, no embedded database in DATA_DIR, the running service or the
folder could not be read); 2 usage error (no --out, an unknown option).`;

export const backup: Command = {
  name: 'backup',
  summary: 'back up the embedded database (also while the service runs)',
  help: BACKUP_HELP,
  async run(argv: string[], { env, io }: Context): Promise<number> {
    const o = parse(argv, { out: { type: 'string' } });
    if (o.help) {
      io.out(BACKUP_HELP);
      return EXIT_OK;
    }
    if (!o.out) throw new UsageError('--out FILE is required');
    const target = databaseTarget(env);
    if (target.databaseUrl) throw new CliError(PG_HINT);
    if (!existsSync(join(target.dataDir, 'pglite'))) throw new CliError(`${target.dataDir} holds no embedded database`);
    const out = callerPath(env, o.out);
    if (existsSync(out)) throw new CliError(`${out} exists: refusing to overwrite it`);

    let bytes = await requestBackup(adminSocketPath(target.dataDir)).catch((err: Error) => {
      throw new CliError(`the running service could not take the backup: ${err.message}`);
    });
    let how = 'from the running service';
    if (bytes === undefined) {
      const db = await connectDatabase({ ...target, log: (m) => io.err(m) }).catch((err: Error) => {
        throw new CliError(`cannot open the embedded database in ${target.dataDir}: ${err.message}`);
      });
      try {
        bytes = await db.backup!();
      } finally {
        await db.close();
      }
      how = 'with the service stopped';
    }
    await writeFile(out, bytes, { mode: 0o600, flag: 'wx' });
    io.err(`backup of ${target.dataDir} (${how}) written to ${out}: ${bytes.length} bytes`);
    io.err('ENCRYPTION_KEY is not in it: keep the key backed up separately.');
    return EXIT_OK;
  },
};

const RESTORE_HELP = `Usage: vault-standalone restore --in FILE

Restores a backup written by \`vault-standalone backup\` into DATA_DIR, which must not
hold a database yet (a fresh folder: the running service's own folder is refused). The
file is checked whole first and the database built aside, then moved into place: a
damaged file changes nothing. Then start the service on it with the ENCRYPTION_KEY the
backup was taken under.

Options:
  --in FILE    the backup
  -h, --help   this help

Exit codes: 0 restored; 1 failure, DATA_DIR left as it was (FILE unreadable or
damaged, DATA_DIR already holds a database, DATABASE_URL is set); 2 usage error
(no --in, an unknown option).`;

export const restore: Command = {
  name: 'restore',
  summary: 'restore an embedded-database backup into an empty DATA_DIR',
  help: RESTORE_HELP,
  async run(argv: string[], { env, io }: Context): Promise<number> {
    const o = parse(argv, { in: { type: 'string' } });
    if (o.help) {
      io.out(RESTORE_HELP);
      return EXIT_OK;
    }
    if (!o.in) throw new UsageError('--in FILE is required');
    const target = databaseTarget(env);
    if (target.databaseUrl) throw new CliError(PG_HINT);
    const file = callerPath(env, o.in);
    const bytes = await readFile(file).catch((err: Error) => {
      throw new CliError(`cannot read ${file}: ${err.message}`);
    });
    try {
      await restoreEmbedded(target.dataDir, new Uint8Array(bytes));
    } catch (err) {
      throw new CliError(`cannot restore into ${target.dataDir}: ${(err as Error).message}`);
    }
    io.err(`restored ${file} into ${target.dataDir}; start the service there with the ENCRYPTION_KEY of the backup`);
    return EXIT_OK;
  },
};
