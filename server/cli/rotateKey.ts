// rotate-key: re-wraps every data key from the current ENCRYPTION_KEY to a new one in
// ONE transaction, proves inside that transaction that the new key alone opens the
// canary, every data key and every secret, and only then commits. Any failure rolls
// back: the old key keeps working and nothing is lost.
import { createCrypto, CryptoError, type Crypto, type RootKeySpec } from '../../crypto/index.js';
import { ConfigError, ENCRYPTION_KEY_MESSAGE, parseKeySettings, rootKeySpec, type KeySettings } from '../config.js';
import type { Database, Queryable, Sql } from '../../storage/db.js';
import { auditStore } from '../../storage/audit.js';
import { createStore, type Store, type TxStores } from '../../storage/index.js';
import type { WrappedKeyRow } from '../../storage/keys.js';
import { migrate } from '../../storage/migrate.js';
import { AuditTrailError, loadAuditKey } from '../domain/audit.js';
import { dataKeyAad, openKeyring, WrongEncryptionKeyError } from '../domain/keyring.js';
import { secretAad } from '../domain/secrets.js';
import { CliError, EXIT_OK, parse, refuseKeyLikeArguments, type Command, type CommandHooks, type Context, type Io } from './command.js';
import { databaseTarget, describeTarget, openDatabase } from './database.js';

const HELP = `Usage: vault-standalone rotate-key [--dry-run]

Rotates the root key: every data key is re-wrapped from the current root key to a new
one in one transaction: ENCRYPTION_KEY to NEW_ENCRYPTION_KEY, or between the local key
and a PKCS#11 token's key, either way (KEY_PROVIDER and NEW_KEY_PROVIDER). Before committing, the new key ALONE must open
the canary, unwrap every data key (the audit key included) to the same key as before,
open every secret of every project and extend the audit chain; otherwise everything is
rolled back and the current key keeps working.

Stop the service first (every replica): a running replica would keep wrapping new
project keys under the old key. The command refuses while other vault-standalone
connections to the database exist.

Environment (never arguments: arguments are visible to every user in \`ps\`):
  KEY_PROVIDER          who holds the current key: local (default) or pkcs11
  ENCRYPTION_KEY        the current key (32 hex characters), when local
  PKCS11_MODULE, PKCS11_TOKEN_LABEL or PKCS11_SLOT, PKCS11_PIN or PKCS11_PIN_FILE,
  PKCS11_KEY_LABEL      the current key, when pkcs11 (as the service takes them)
  NEW_KEY_PROVIDER      who holds the new key: local (default) or pkcs11
  NEW_ENCRYPTION_KEY    the new key (32 hex characters; e.g. openssl rand -hex 16), when local
  NEW_PKCS11_*          the new key, when pkcs11 (create it first with hsm-init); each
                        unset group (module; token label or slot; PIN or PIN file; key
                        label) falls back to its PKCS11_* value
  DATABASE_URL          the service's database (or DATA_DIR for the embedded one)

Options:
  --dry-run     do everything, verify, then roll back (changes nothing)
  -h, --help    this help

Afterwards set ENCRYPTION_KEY to the new key everywhere it is kept (the Secret
vault-secrets, the infrastructure variables, your backups) and start the service. It
then refuses the old key. Database backups taken BEFORE the rotation still need the
old key: keep it as long as you keep them.


Exit codes: 0 rotated (or dry run verified), 1 failure (nothing changed), 2 usage error.`;

const ROTATION_CHECK = 'vault-standalone:rotation-check';
const APP_NAME = 'vault-standalone';

class DryRun extends Error {
  constructor(readonly result: RotationResult) {
    super('dry run');
  }
}

interface RotationResult {
  fromProvider: string;
  toProvider: string;
  fromVersion: number;
  toVersion: number;
  keys: number;
  systemKeys: number;
  auditKeys: number;
  projects: number;
  secrets: number;
}

/** The stores of one transaction, shaped as a Store for openKeyring (which only reads there). */
function storeOf(s: TxStores): Store {
  return {
    ...s,
    sql: s.tx as unknown as Sql,
    transaction: () => Promise.reject(new Error('no nested transaction inside the rotation')),
  };
}

export const rotateKey: Command = {
  name: 'rotate-key',
  summary: 'rotate ENCRYPTION_KEY: re-wrap every data key under NEW_ENCRYPTION_KEY, verified, in one transaction',
  help: HELP,
  async run(argv: string[], { env, io, hooks }: Context): Promise<number> {
    refuseKeyLikeArguments(argv);
    const o = parse(argv, { 'dry-run': { type: 'boolean' } });
    if (o.help) {
      io.out(HELP);
      return EXIT_OK;
    }
    const trimmed = { ...env, ENCRYPTION_KEY: env.ENCRYPTION_KEY?.trim(), NEW_ENCRYPTION_KEY: env.NEW_ENCRYPTION_KEY?.trim() };
    const source = keySettings(trimmed, '');
    const target = keySettings(trimmed, 'NEW_');
    try {
      return await rotateBetween(source, target, env, io, o['dry-run'] === true, hooks);
    } finally {
      source.pkcs11?.pin.fill(0);
      target.pkcs11?.pin.fill(0);
    }
  },
};

function keySettings(env: Record<string, string | undefined>, prefix: '' | 'NEW_'): KeySettings {
  try {
    return parseKeySettings(env, prefix);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    if (err.message === ENCRYPTION_KEY_MESSAGE) throw new CliError('ENCRYPTION_KEY must be 32 hex characters (the current key)');
    if (err.message.startsWith('NEW_ENCRYPTION_KEY must')) {
      throw new CliError('NEW_ENCRYPTION_KEY must be 32 hex characters (generate one with: openssl rand -hex 16)');
    }
    throw new CliError(err.message);
  }
}

function sameKey(a: KeySettings, b: KeySettings): boolean {
  if (a.keyProvider === 'local' && b.keyProvider === 'local') return a.encryptionKey === b.encryptionKey;
  if (a.keyProvider === 'pkcs11' && b.keyProvider === 'pkcs11') {
    const x = a.pkcs11!;
    const y = b.pkcs11!;
    return x.module === y.module && x.tokenLabel === y.tokenLabel && x.slot === y.slot && x.keyLabel === y.keyLabel;
  }
  return false;
}

async function rotateBetween(
  source: KeySettings,
  target: KeySettings,
  env: Record<string, string | undefined>,
  io: Io,
  dryRun: boolean,
  hooks: CommandHooks | undefined,
): Promise<number> {
  {
    if (sameKey(source, target)) {
      throw new CliError(
        source.keyProvider === 'local'
          ? 'NEW_ENCRYPTION_KEY is the same as ENCRYPTION_KEY: nothing to rotate'
          : 'the NEW_PKCS11_* settings name the current key (same module, token and key label): nothing to rotate',
      );
    }

    io.err(`rotating the root key of the ${describeTarget(databaseTarget(env))}`);
    // One connection: the rotation is sequential, and the check for other sessions below
    // then counts only others.
    const db = await openDatabase(env, io, 1);
    const cryptos: Crypto[] = [];
    try {
      await migrate(db.sql);
      const store = createStore(db.sql);
      await refuseWhileServiceRuns(db.kind, db.sql);
      if (!(await store.keys.canary())) {
        throw new CliError('this database holds no keys yet (the service has never started on it): nothing to rotate');
      }
      const versions = await store.keys.rootKeyVersions();
      if (versions.length !== 1) {
        throw new CliError(`expected every data key under one root key version, found versions ${versions.join(', ')}`);
      }
      const from = versions[0]!;
      const to = from + 1;
      const rotating = await startCrypto([rootKeySpec(target, to, 'NEW_'), rootKeySpec(source, from)]);
      cryptos.push(rotating);
      await assertCurrentKey(store, rotating, source, target, from, cryptos);
      // The rotation is audited: the chain must be keyed (and its key open) already.
      await loadAuditKey(store, rotating).catch((err: unknown) => {
        throw err instanceof AuditTrailError ? new CliError(`${err.message}. Nothing was changed.`) : err;
      });
      // The proof: a crypto instance that holds the new key and nothing else.
      const newOnly = await startCrypto([rootKeySpec(target, to, 'NEW_')]);
      cryptos.push(newOnly);

      let result: RotationResult;
      try {
        result = await store.transaction((s) =>
          rotate(s, { kind: db.kind, rotating, newOnly, fromProvider: source.keyProvider, from, to, step: hooks?.step, dryRun, io }),
        );
      } catch (err) {
        if (err instanceof DryRun) {
          report(io, err.result, true);
          return EXIT_OK;
        }
        const why = err instanceof CliError ? err.message : describe(err);
        throw new CliError(
          `rotation failed and was rolled back: ${why}\nNothing was changed: ${source.keyProvider === 'local' ? 'ENCRYPTION_KEY' : 'the PKCS#11 key'} is still the key of this database.`,
        );
      }
      report(io, result, false, target.keyProvider);
      return EXIT_OK;
    } finally {
      for (const c of cryptos) await c.close().catch(() => {});
      await db.close().catch(() => {});
    }
  }
}

/** A crypto instance for the CLI; a provider that cannot start (a wrong NEW_PKCS11_PIN...) is a one-line CliError. */
async function startCrypto(rootKeys: RootKeySpec[]): Promise<Crypto> {
  try {
    return await createCrypto({ rootKeys, threads: 1 });
  } catch (err) {
    if (err instanceof CryptoError && err.message !== new CryptoError(err.code).message) throw new CliError(`${err.message}. Nothing was changed.`);
    throw err;
  }
}

function describe(err: unknown): string {
  const e = err as { code?: string; message?: string };
  return e.code && e.message ? `${e.message} (${e.code})` : (e.message ?? String(err));
}

/**
 * Runs twice: before the transaction (to fail fast), and inside it right before the
 * commit, when the key tables are locked: a replica that connected meanwhile is waiting
 * on those locks with the old key, and committing would leave it starting against keys
 * it cannot unwrap. The transaction is rolled back instead.
 */
async function refuseWhileServiceRuns(kind: Database['kind'], sql: Queryable): Promise<void> {
  if (kind !== 'postgres') return; // the embedded database admits one process: checked on open
  // pg_stat_activity is a per-transaction snapshot, taken at its first read: take a fresh one.
  await sql`select pg_stat_clear_snapshot()`;
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from pg_stat_activity
    where datname = current_database() and application_name = ${APP_NAME} and pid <> pg_backend_pid()`;
  const n = row?.n ?? 0;
  if (n > 0) {
    throw new CliError(
      `${n} other ${APP_NAME} connection${n === 1 ? '' : 's'} to this database: is the service running? ` +
        'Stop every replica first (e.g. kubectl scale deployment ... --replicas=0): a running replica would keep ' +
        'wrapping new project keys under the old key. Nothing was changed.',
    );
  }
}

/** The old key must open the canary; if the new one already does, say so. */
async function assertCurrentKey(store: Store, rotating: Crypto, source: KeySettings, target: KeySettings, from: number, cryptos: Crypto[]) {
  try {
    await openKeyring(store, rotating);
    return;
  } catch (err) {
    if (!(err instanceof WrongEncryptionKeyError)) throw err;
  }
  let alreadyRotated = false;
  const probe = await startCrypto([rootKeySpec(target, from, 'NEW_')]);
  cryptos.push(probe);
  try {
    await openKeyring(store, probe);
    alreadyRotated = true;
  } catch {
    // neither key opens it
  }
  throw new CliError(
    `${source.keyProvider === 'local' ? 'ENCRYPTION_KEY' : 'The PKCS#11 key (PKCS11_*)'} is not the current key: it does not open this database's canary. Nothing was changed.` +
      (alreadyRotated
        ? target.keyProvider === 'local'
          ? ' NEW_ENCRYPTION_KEY already opens it: the rotation seems done; set ENCRYPTION_KEY to that key.'
          : ' The NEW_PKCS11_* key already opens it: the rotation seems done; start the service with those settings.'
        : ''),
  );
}

async function rotate(
  s: TxStores,
  opts: {
    kind: Database['kind'];
    rotating: Crypto;
    newOnly: Crypto;
    fromProvider: string;
    from: number;
    to: number;
    /** The test seam of CommandHooks. */
    step?: (n: number) => Promise<void> | void;
    dryRun: boolean;
    io: Io;
  },
): Promise<RotationResult> {
  const { rotating, newOnly, from, to, step, io } = opts;
  // ACCESS EXCLUSIVE also blocks plain reads: a replica starting now waits here and then
  // reads the committed version, instead of reading version `from` and starting with
  // the old key. (EXCLUSIVE would let it read.) crypto_keys first, as every writer does.
  await s.tx`lock table crypto_keys, crypto_canary, crypto_root_key in access exclusive mode`;
  // The version and the keys move together; the foreign key is checked at commit.
  await s.tx`set constraints crypto_keys_root_key_current deferred`;
  const current = await s.keys.currentRootKeyVersion();
  if (current !== from) throw new CliError(`the current root key version is ${current}, not ${from}: another rotation ran meanwhile`);
  const rows = await s.tx<WrappedKeyRow[]>`select id, purpose, root_key_version, wrapped from crypto_keys
    order by created_at, id`;
  const stray = rows.find((r) => r.rootKeyVersion !== from);
  if (stray) throw new CliError(`data key ${stray.id} is under root key version ${stray.rootKeyVersion}, not ${from}`);
  await s.keys.setCurrentRootKeyVersion(to);

  const rewrapped = new Map<string, Buffer>();
  // The same data key after re-wrapping, not merely some key: its MAC of a fixed
  // message must not change. Computed before, with the old root key.
  const fingerprints = new Map<string, Buffer>();
  for (const r of rows) fingerprints.set(r.id, await rotating.mac(r.wrapped, dataKeyAad(r.id), ROTATION_CHECK));
  await step?.(0);
  for (const r of rows) {
    const wrapped = await rotating.rewrap(r.wrapped, dataKeyAad(r.id), to);
    await s.keys.updateWrapped(r.id, to, wrapped);
    rewrapped.set(r.id, wrapped);
    await step?.(rewrapped.size);
  }
  io.err(`re-wrapped ${rows.length} data keys; verifying with the new key alone`);

  // 1. The canary opens (what the service checks at start).
  await openKeyring(storeOf(s), newOnly).catch((err: unknown) => {
    throw new CliError(`the new key does not open the canary after re-wrapping (${describe(err)})`);
  });
  // 2. Every data key (system, audit, and projects without secrets too) unwraps to the same key.
  for (const [id, wrapped] of rewrapped) {
    const mac = await newOnly.mac(wrapped, dataKeyAad(id), ROTATION_CHECK);
    if (!mac.equals(fingerprints.get(id)!)) throw new CliError(`data key ${id} is not the same key after re-wrapping`);
  }
  // 3. Every secret of every project opens: one task per project.
  let secrets = 0;
  const projects = await s.projects.list();
  for (const p of projects) {
    const record = await s.projects.byId(p.id);
    if (!record) continue;
    // Grouped by the data key each row names (two while an online re-key of the project is unfinished).
    const byKey = new Map<string, { wrapped: Buffer; items: { blob: Buffer; aad: string }[] }>();
    for (const env of record.environments) {
      const folders = await s.folders.subtree(env.id, '/');
      for (const r of await s.secrets.listByFolders(folders.map((f) => f.id))) {
        const at = { projectId: record.id, environmentId: env.id, folderId: r.folderId, secretId: r.id, key: r.key, version: r.version };
        const group = byKey.get(r.dataKeyId) ?? { wrapped: r.wrappedKey, items: [] };
        byKey.set(r.dataKeyId, group);
        group.items.push({ blob: r.valueBlob, aad: secretAad('value', at) });
        if (r.commentBlob) group.items.push({ blob: r.commentBlob, aad: secretAad('comment', at) });
        secrets++;
      }
    }
    for (const [keyId, group] of byKey) {
      await newOnly.openMany(group.wrapped, dataKeyAad(keyId), group.items).catch((err: unknown) => {
        throw new CliError(`a secret of project '${record.slug}' does not open with the new key (${describe(err)})`);
      });
    }
  }
  const result: RotationResult = {
    fromProvider: opts.fromProvider,
    toProvider: rotating.rootKeyProvider,
    fromVersion: from,
    toVersion: to,
    keys: rows.length,
    systemKeys: rows.filter((r) => r.purpose === 'system').length,
    auditKeys: rows.filter((r) => r.purpose === 'audit').length,
    projects: projects.length,
    secrets,
  };
  // 4. The audit chain's anchor verifies, and is extended, under the new key alone.
  const auditKey = await loadAuditKey(s, newOnly);
  await auditStore(s.tx, auditKey).append(s.tx, {
    actorType: 'system',
    actorId: null,
    eventType: 'rotate-root-key',
    metadata: { fromVersion: from, toVersion: to, fromProvider: result.fromProvider, toProvider: result.toProvider, keysRewrapped: result.keys, secretsVerified: secrets },
  });
  if (opts.dryRun) throw new DryRun(result);
  await refuseWhileServiceRuns(opts.kind, s.tx);
  return result;
}

function report(io: Io, r: RotationResult, dryRun: boolean, to: KeySettings['keyProvider'] = 'local'): void {
  if (dryRun) {
    io.out(`dry run: the rotation from root key version ${r.fromVersion} to ${r.toVersion} would succeed; rolled back, nothing changed.`);
  } else {
    io.out(`root key rotated: version ${r.fromVersion} -> ${r.toVersion}` + (r.fromProvider !== r.toProvider || r.toProvider !== 'local' ? ` (${r.fromProvider} -> ${r.toProvider})` : ''));
  }
  const projectKeys = r.keys - r.systemKeys - r.auditKeys;
  io.out(`  data keys re-wrapped: ${r.keys} (${r.systemKeys} system, ${r.auditKeys} audit, ${projectKeys} project)`);
  io.out(`  secrets verified with the new key alone: ${r.secrets} (in ${r.projects} project${r.projects === 1 ? '' : 's'})`);
  if (dryRun) return;
  io.out('');
  io.out('Next:');
  if (to === 'pkcs11') {
    io.out('  1. Configure the service with KEY_PROVIDER=pkcs11 and the PKCS11_* settings of the new key (the');
    io.out('     NEW_PKCS11_* values used here); remove ENCRYPTION_KEY from where it is kept.');
    io.out('  2. Start the service (scale it back up). It now refuses the old key.');
    io.out('  3. Keep the old key as long as you keep database backups taken before this rotation.');
    return;
  }
  io.out('  1. Set ENCRYPTION_KEY to the new key everywhere it is kept: the Secret vault-secrets (service');
  io.out('     namespace), the infrastructure variables file, your password manager.' + (r.fromProvider === 'pkcs11' ? ' Set KEY_PROVIDER=local (or unset it).' : ''));
  io.out('  2. Start the service (scale it back up). It now refuses the old key:');
  io.out('     "ENCRYPTION_KEY does not match the key this database was encrypted with".');
  io.out('  3. Keep the old key as long as you keep database backups taken before this rotation.');
}
