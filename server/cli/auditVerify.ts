// audit-verify: walks the hash-chained audit trail and names the first entry that does
// not verify. Read-only: needs the database, not the keys.
import { createStore } from '../../storage/index.js';
import { CliError, EXIT_FAILURE, EXIT_OK, parse, type Command, type Context } from './command.js';
import { databaseTarget, describeTarget, openDatabase } from './database.js';

const HELP = `Usage: vault-standalone audit-verify

Walks the audit trail from its first entry and checks every entry's hash against its
content and its predecessor's hash. An edited, deleted or inserted row breaks the chain
at that entry. Read-only; needs no key.

Environment: DATABASE_URL (or DATA_DIR for the embedded database).

Options:
  -h, --help    this help

Output: "audit chain ok: N entries" (exit 0), or the id of the first broken entry
(exit 1). Exit 2: usage error.`;

export const auditVerify: Command = {
  name: 'audit-verify',
  summary: 'verify the hash chain of the audit trail',
  help: HELP,
  async run(argv: string[], { env, io }: Context): Promise<number> {
    const o = parse(argv, {});
    if (o.help) {
      io.out(HELP);
      return EXIT_OK;
    }
    const db = await openDatabase(env, io, 1);
    try {
      const [table] = await db.sql<{ t: string | null }[]>`select to_regclass('audit_log')::text as t`;
      if (!table?.t) {
        throw new CliError(`the ${describeTarget(databaseTarget(env))} has no audit trail (the service has never started on it)`);
      }
      const result = await createStore(db.sql).audit.verify();
      if (result.ok) {
        io.out(`audit chain ok: ${result.entries} entr${result.entries === 1 ? 'y' : 'ies'}`);
        return EXIT_OK;
      }
      io.out(
        `audit chain BROKEN at entry id ${result.brokenAt} (${result.entries} entries walked): ` +
          `entry ${result.brokenAt} was changed, or an entry before it was removed or inserted; ` +
          'entries from there on cannot be trusted.',
      );
      return EXIT_FAILURE;
    } finally {
      await db.close().catch(() => {});
    }
  },
};
