// audit-verify: recomputes every MAC of the audit chain with the audit key (so it needs
// ENCRYPTION_KEY, like the service), checks every link and the head anchor, and prints
// the head for the operator to record out of band. Read-only.
import { createCrypto, type Crypto } from '../../crypto/index.js';
import { createStore } from '../../storage/index.js';
import type { FullVerification } from '../../storage/auditCheckpoints.js';
import { AUDIT_HEAD_MAC_CHARS, AuditTrailError, headSummary, loadAuditKey } from '../domain/audit.js';
import { openKeyring, WrongEncryptionKeyError } from '../domain/keyring.js';
import { CliError, EXIT_FAILURE, EXIT_OK, UsageError, parse, type Command, type Context } from './command.js';
import { rootKeySpec } from '../config.js';
import type { RemoteAuditVerification } from '../adminChannel.js';
import { askRunningService, databaseTarget, describeTarget, openDatabase, serviceConfig } from './database.js';

const HELP = `Usage: vault-standalone audit-verify [--full] [--recorded-head ID:MAC]

Recomputes the audit trail from its first entry (or from the prune boundary, when old
entries were archived by retention): every entry's MAC (HMAC-SHA-256 under
the audit key, held by the crypto workers) over its content and its predecessor's MAC,
every link, and the head anchor (entry count, last id and last MAC, itself MACed). An
edited, inserted or deleted row, the newest ones included, and an edited anchor are
each named. Every keyed checkpoint (table audit_checkpoints, what the service's
incremental verification continues from) is checked too: its MAC, its link to the one
before it, and that the chain is what it vouches for; an edited, forged or deleted
checkpoint is named.

With --recorded-head (a head printed earlier), also checks that this entry is still in
the chain with that MAC: a restore of an older copy of the whole trail is then caught.

Environment: the service's own: ENCRYPTION_KEY, and DATABASE_URL (or DATA_DIR for the
embedded database). With the embedded database, a running service is asked over its
admin socket (DATA_DIR/run/admin.sock) and walks the trail with its own key, in short
statements between which it goes on serving.

The walk is always full (--full is accepted, for clarity): the service's own checks are
incremental on request and full in the background (AUDIT_FULL_VERIFY_INTERVAL_SECONDS).

Options:
  --full                  walk every entry and checkpoint (the default)
  --recorded-head ID:MAC  an earlier head: entry id and the MAC prefix printed with it
  -h, --help              this help

Output: "audit chain ok: N entries" and the head (exit 0), or what is broken (exit 1).
Exit 2: usage error.`;

const RECORDED_HEAD = new RegExp(`^(\\d{1,15}):([0-9a-fA-F]{${AUDIT_HEAD_MAC_CHARS},64})$`);

export const auditVerify: Command = {
  name: 'audit-verify',
  summary: 'verify the audit trail: every entry MAC, every link and the head anchor',
  help: HELP,
  async run(argv: string[], { env, io }: Context): Promise<number> {
    const o = parse(argv, { 'recorded-head': { type: 'string' }, full: { type: 'boolean' } });
    if (o.help) {
      io.out(HELP);
      return EXIT_OK;
    }
    let recordedHead: { lastId: number; macPrefix: string } | undefined;
    if (o['recorded-head'] !== undefined) {
      const m = RECORDED_HEAD.exec(o['recorded-head']);
      if (!m) throw new UsageError(`--recorded-head must be ID:MAC (an entry id and at least ${AUDIT_HEAD_MAC_CHARS} hex characters of its MAC)`);
      recordedHead = { lastId: Number(m[1]), macPrefix: m[2]!.toLowerCase() };
    }
    // A running service on the embedded database holds the folder: it verifies, with its own key.
    const remote = await askRunningService(env, { command: 'audit-verify', ...(recordedHead ? { recordedHead } : {}) });
    if (remote !== undefined) {
      const r = JSON.parse(remote.toString('utf8')) as RemoteAuditVerification;
      io.err('verified by the running service (over its admin socket)');
      for (const line of describeResult(r)) io.out(line);
      return r.ok ? EXIT_OK : EXIT_FAILURE;
    }
    const config = await serviceConfig(env, io);
    const target = describeTarget(databaseTarget(env));
    const db = await openDatabase(env, io, 1);
    let crypto: Crypto | undefined;
    try {
      const [table] = await db.sql<{ t: string | null }[]>`select to_regclass('audit_log')::text as t`;
      const boot = createStore(db.sql);
      if (!table?.t || !(await boot.keys.canary())) {
        throw new CliError(`the ${target} has no audit trail (the service has never started on it)`);
      }
      const versions = await boot.keys.rootKeyVersions();
      if (versions.length !== 1) throw new CliError(`data keys are wrapped under several root key versions (${versions.join(', ')})`);
      crypto = await createCrypto({ rootKeys: [rootKeySpec(config, versions[0]!)], threads: config.cryptoThreads });
      let result: FullVerification;
      try {
        // The canary exists, so this only reads: it proves ENCRYPTION_KEY is this database's key.
        const { record } = await openKeyring(boot, crypto);
        if (!record) throw new AuditTrailError('the instance has not been upgraded to this version yet: start the service (this version) once, then retry');
        // Legacy entries are those the instance recorded (sealed in its canary), no others.
        const auditKey = await loadAuditKey(boot, crypto, record.legacy);
        // Read-only: every entry and checkpoint; nothing is written.
        result = await createStore(db.sql, { auditKey }).auditVerify.full({ recordedHead, pause: async () => {} });
      } catch (err) {
        if (err instanceof WrongEncryptionKeyError || err instanceof AuditTrailError) throw new CliError(err.message);
        throw err;
      }
      if (!result.complete) throw new CliError('the walk stopped before the head'); // Never: nothing asks it to stop.
      const { complete: _c, read, checkpoints, newestCheckpoint: _n, ...verdict } = result;
      for (const line of describeResult(verdict.ok ? { ...verdict, head: headSummary(verdict.head) } : verdict)) io.out(line);
      if (read !== verdict.entries) io.out(`  ${plural(verdict.entries - read, 'entry', 'entries')} before the prune boundary were archived by retention (audit-verify --archive FILE checks an archive)`);
      if (checkpoints > 0) io.out(`  ${plural(checkpoints, 'keyed checkpoint', 'keyed checkpoints')} checked`);
      return result.ok ? EXIT_OK : EXIT_FAILURE;
    } finally {
      await crypto?.close().catch(() => {});
      await db.close().catch(() => {});
    }
  },
};

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

function describeResult(r: RemoteAuditVerification): string[] {
  if (r.ok) {
    const h = r.head;
    const lines = [
      `audit chain ok: ${plural(r.entries, 'entry', 'entries')}`,
      `head: ${plural(h.entries, 'entry', 'entries')}, last id ${h.lastId}, mac ${h.mac}`,
      `  record it out of band; a later check that the trail was not rolled back: audit-verify --recorded-head ${h.lastId}:${h.mac}`,
    ];
    if (h.legacyEntries > 0) {
      lines.push(
        `  of which ${h.legacyEntries} written before the chain was keyed: checked by their plain SHA-256 chain, pinned by the anchor`,
      );
    }
    return lines;
  }
  const walked = `${plural(r.entries, 'entry', 'entries')} walked`;
  switch (r.reason) {
    case 'entry':
      return [
        `audit chain BROKEN at entry id ${r.brokenAt} (${walked}): ` +
          `entry ${r.brokenAt} was changed, or an entry before it was removed or inserted; ` +
          'entries from there on cannot be trusted.',
      ];
    case 'anchor-missing':
      return [`audit chain BROKEN: the head anchor (audit_chain_head) is missing (${walked}); the newest entries cannot be vouched for.`];
    case 'anchor-invalid':
      return [`audit chain BROKEN: the head anchor (audit_chain_head) was edited: its MAC does not verify (${walked}).`];
    case 'head-mismatch':
      return [
        `audit chain BROKEN at its end: the anchor records ${plural(r.anchored!.entries, 'entry', 'entries')} ending at id ` +
          `${r.anchored!.lastId}, the table holds ${plural(r.found!.entries, 'entry', 'entries')} ending at id ${r.found!.lastId}: ` +
          'the newest entries were removed (or the anchor is older than the table).',
      ];
    case 'recorded-head-missing':
      return [
        `audit chain BROKEN: the recorded head is not in the chain (${walked}): that entry was removed or differs, ` +
          'so the trail (with its anchor) was rolled back to an older copy or replaced.',
      ];
    case 'trail-missing':
      return [
        `audit chain BROKEN: every entry verifies (${walked}), but the chain was started while the instance already ` +
          'held projects, identities or people and no trail, or over a trail it never recorded: the trail before it ' +
          '(entries, key and anchor) was deleted or rewritten.',
      ];
    case 'legacy-unrecorded':
      return [
        `audit chain BROKEN${r.brokenAt === null ? '' : ` at entry id ${r.brokenAt}`} (${walked}): entries claim to be written ` +
          'before the chain was keyed that this instance never recorded as such (or recorded ones are gone): the trail was ' +
          'rewritten as a keyless chain.',
      ];
    case 'checkpoint-invalid':
      return [
        `audit chain BROKEN: the keyed checkpoint at entry id ${r.brokenAt} (table audit_checkpoints) does not verify under ` +
          'the audit key, or does not match the chain where it stands: it was forged or edited.',
      ];
    case 'checkpoint-missing':
      return [
        `audit chain BROKEN: a keyed checkpoint before the one at entry id ${r.brokenAt} (table audit_checkpoints) was deleted.`,
      ];
    case 'checkpoint-ahead':
      return [
        `audit chain BROKEN: a valid keyed checkpoint vouches for entries through id ${r.brokenAt}, beyond the anchor: ` +
          'the newest entries (with the anchor) were removed or rolled back.',
      ];
  }
}
