// rekey: gives every project a fresh data key, re-encrypts every value and comment of
// every version under it, and destroys the old data key. Online: it runs against the
// database while the service (every replica) keeps serving, in small transactions:
//
//   1. start (per project): a new data key becomes the project's current one; the old
//      one is kept as projects.previous_data_key_id. From this commit on, every writer
//      seals under the new key (it reads the key inside its own transaction, see
//      storage projects.sealingKey), and every reader opens each row with the key the
//      row names (secrets.data_key_id, read with the row): old and new rows coexist.
//   2. batches: up to --batch-size rows (current secrets, then versions) still under the
//      old key are locked, opened, sealed under the new key, verified, and written back
//      naming the new key. Writers of those rows wait for the batch (row locks), and a
//      batch skips a row a writer has moved meanwhile.
//   3. finish: under the project's row lock, the old key is deleted. The foreign keys
//      from the rows make that fail while any row still names it (a writer that read the
//      old key before step 1 and committed after the last batch): then back to 2.
//
// After each commit the replicas are told (Redis, when REDIS_URL is set) to drop what
// they cached of the project and its environments; they would be right without it (a
// cached row carries its own wrapped key), only slower to forget old ciphertext.
//
// Killed anywhere, the next run finishes: a 'rekey-started' audit entry with no
// 'rekey-finished' after it is an unfinished run; a project is done when its data key is
// younger than that entry and it has no previous key. Answers "an old backup and the
// old root key must not open what is written after the incident": rotate-key changes
// the root key only, the data keys stay.
//
// The same run gives client secrets a new MAC key version (server/domain/keyring.ts) and
// the audit trail a new key with a checkpoint (storage/audit.ts rekeyAuditKey).
import { randomUUID } from 'node:crypto';
import { createCrypto, type Crypto } from '../../crypto/index.js';
import { auditStore, lockAuditChain, rekeyAuditKey, type AuditKey } from '../../storage/audit.js';
import { memoryBus, redisBus, type CacheBus } from '../../storage/cache.js';
import type { Tx } from '../../storage/db.js';
import { createStore, type Store, type TxStores } from '../../storage/index.js';
import { migrate } from '../../storage/migrate.js';
import { rootKeySpec } from '../config.js';
import { AuditTrailError, auditKeyOf, loadAuditKey } from '../domain/audit.js';
import { topics } from '../domain/caches.js';
import { dataKeyAad, openKeyring, rekeyMacKey } from '../domain/keyring.js';
import { secretAad } from '../domain/secrets.js';
import { CliError, EXIT_OK, parse, refuseKeyLikeArguments, UsageError, type CommandHooks, type Command, type Context } from './command.js';
import { describeTarget, databaseTarget, openDatabase, serviceConfig } from './database.js';

const HELP = `Usage: vault-standalone rekey [--batch-size N]
       vault-standalone rekey --retire-mac-keys

Gives every project a fresh random data key: every value and comment of every
version is re-encrypted under it (and verified with it), then the old data key is
deleted. It runs while the service serves (every replica keeps answering reads and
writes of the project being re-keyed), in small transactions of at most N rows
(default 200). If the command is killed, run it again: it finishes the run.

Use it after an incident where the root key (ENCRYPTION_KEY or the token) and a
database backup may both have leaked: rotate-key first (a new root key, service
stopped), then rekey (new data keys), so that backup and old key open nothing
written afterwards. See docs/operations.md, "Which rotation for which incident".

The same run gives client secrets a new MAC key version (the canary is sealed again
under a fresh system key, which becomes the current MAC key). Each client secret keeps
the version its hash was made with until its next successful login, which re-MACs it
under the current one; an old version is deleted once no usable client secret names
it (revoked, expired and used-up secrets are neutralised so they do not keep it).
--retire-mac-keys only does that deletion (run it later, e.g. after every client
has logged in once) and reports how many secrets still name an old version.

And the audit trail a new key: the whole chain is verified under the old one, a
checkpoint entry MACed under the new one records the chain's digest, and the old key
is deleted; audit-verify checks older entries against that digest.

With REDIS_URL set (as the service has it), the replicas are told to drop what they
cached of each project as it moves; without it they forget within a minute.

Environment: the service's own (KEY_PROVIDER, ENCRYPTION_KEY or PKCS11_*, DATABASE_URL
or DATA_DIR, REDIS_URL).

Exit codes: 0 done, 1 failure (what is done so far stays done), 2 usage error.`;

const DEFAULT_BATCH = 200;
const MAX_BATCH = 10_000;

interface Row {
  id: string;
  secretId: string;
  environmentId: string;
  folderId: string;
  key: string;
  version: number;
  valueBlob: Buffer;
  commentBlob: Buffer | null;
}

interface ProjectKeys {
  id: string;
  dataKeyId: string;
  previousDataKeyId: string | null;
  createdAt: Date;
}

/** What one run needs: the store, the workers, the bus, the test seam. */
interface Run {
  store: Store;
  crypto: Crypto;
  bus: CacheBus;
  hooks: CommandHooks | undefined;
  batchSize: number;
  steps: number;
  blobs: number;
}

export const rekey: Command = {
  name: 'rekey',
  summary: 'give every project a fresh data key, re-encrypting every version, while the service serves (resumable)',
  help: HELP,
  async run(argv: string[], { env, io, hooks }: Context): Promise<number> {
    refuseKeyLikeArguments(argv);
    const o = parse(argv, { 'batch-size': { type: 'string' }, 'retire-mac-keys': { type: 'boolean' } });
    if (o.help) {
      io.out(HELP);
      return EXIT_OK;
    }
    const batchSize = o['batch-size'] === undefined ? DEFAULT_BATCH : Number(o['batch-size']);
    if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_BATCH) {
      throw new UsageError(`--batch-size must be an integer from 1 to ${MAX_BATCH}`);
    }
    const config = await serviceConfig(env, io);
    io.err(`re-keying the projects of the ${describeTarget(databaseTarget(env))}`);
    const db = await openDatabase(env, io, 2);
    let crypto: Crypto | undefined;
    let bus: CacheBus | undefined;
    try {
      await migrate(db.sql);
      const store = createStore(db.sql);
      const versions = await store.keys.rootKeyVersions();
      if (versions.length !== 1) throw new CliError('this database holds no keys yet, or a rotation is unfinished: nothing to re-key');
      crypto = await createCrypto({ rootKeys: [rootKeySpec(config, versions[0]!)], threads: 1 });
      config.pkcs11?.pin.fill(0);
      await openKeyring(store, crypto); // the canary: the right root key, or stop here
      await loadAuditKey(store, crypto).catch((err: unknown) => {
        throw err instanceof AuditTrailError ? new CliError(`${err.message}. Nothing was changed.`) : err;
      });
      const namespace = config.redisUrl ? (await store.organizations.ensureDefault()).id : undefined;
      bus = config.redisUrl
        ? await redisBus(config.redisUrl, { namespace, waitMs: config.dbWaitMs, log: (m) => io.err(`warning: redis: ${m}`) })
        : memoryBus();

      if (o['retire-mac-keys']) {
        await retireMacKeys(store, crypto, bus, io);
        return EXIT_OK;
      }

      const lastRun = async () =>
        (await db.sql<{ id: string; at: Date; eventType: string }[]>`select id, at, event_type from audit_log
          where event_type in ('rekey-started', 'rekey-finished') order by id desc limit 1`)[0];
      let last = await lastRun();
      const resuming = last?.eventType === 'rekey-started';
      if (resuming) io.err(`resuming the unfinished run started at ${last!.at.toISOString()}`);
      else {
        await store.transaction(async (s) => appendSystem(s, crypto!, 'rekey-started', {}));
        last = await lastRun();
      }
      const startedAt = last!.at;
      const run: Run = { store, crypto, bus, hooks, batchSize, steps: 0, blobs: 0 };
      // The client-secret MAC key: a new version, unless this run made one already.
      const macKeyAge = (await db.sql<{ createdAt: Date }[]>`select k.created_at from crypto_canary c
        join crypto_keys k on k.id = c.key_id where c.id = 1`)[0]!.createdAt;
      if (macKeyAge < startedAt) {
        await store.transaction(async (s) => {
          const { from, to } = await rekeyMacKey(s, crypto!);
          await appendSystem(s, crypto!, 'rekey-mac-key', { previousKeyId: from, keyId: to });
        });
        // Running replicas drop the MAC key their logins cached (caches.logins).
        await bus.publish(topics.macKey, '');
        await committed(run);
        io.err('client secrets: a new MAC key version is current (each secret moves to it at its next login)');
      }
      // The audit key: a new version, with a checkpoint; the old key is deleted.
      const auditKeyAge = (await db.sql<{ createdAt: Date }[]>`select created_at from crypto_keys where purpose = 'audit'`)[0]!.createdAt;
      if (auditKeyAge < startedAt) {
        await store.transaction(async (s) => {
          await lockAuditChain(s.tx);
          await s.tx`set constraints audit_chain_head_key_id_fkey deferred`;
          const from = await loadAuditKey(s, crypto!);
          const id = randomUUID();
          const wrapped = await crypto!.generateDataKey(dataKeyAad(id));
          await s.tx`delete from crypto_keys where id = ${from.keyId} and purpose = 'audit'`;
          await s.keys.insert({ id, purpose: 'audit', rootKeyVersion: crypto!.rootKeyVersion, wrapped });
          await rekeyAuditKey(s.tx, from, auditKeyOf(crypto!, id, wrapped)).catch((err: unknown) => {
            throw new CliError(`the audit chain does not verify under its current key (${(err as Error).message}): run audit-verify; nothing was changed`);
          });
        });
        await committed(run);
        io.err('audit trail: a new audit key; a checkpoint entry vouches for the entries before it, and the old key is deleted');
      }
      const todo = await db.sql<{ id: string }[]>`select p.id from projects p join crypto_keys k on k.id = p.data_key_id
        where k.created_at < ${startedAt} or p.previous_data_key_id is not null order by p.created_at, p.id`;
      let projects = 0;
      for (const p of todo) {
        if (await rekeyProject(run, p.id, startedAt)) projects++;
      }
      await store.transaction(async (s) =>
        appendSystem(s, crypto!, 'rekey-finished', { projects, blobsReencrypted: run.blobs }),
      );
      await retireMacKeys(store, crypto, bus, io);
      io.out(`re-keyed ${projects} project${projects === 1 ? '' : 's'} (${run.blobs} values and comments re-encrypted; old data keys deleted)`);
      return EXIT_OK;
    } finally {
      await bus?.close().catch(() => {});
      await crypto?.close().catch(() => {});
      await db.close().catch(() => {});
    }
  },
};

/** Deletes MAC key versions no usable client secret names any more; says how many secrets still hold an old one. */
async function retireMacKeys(store: Store, crypto: Crypto, bus: CacheBus, io: Context['io']) {
  const r = await store
    .transaction(async (s) => {
      const out = await s.keys.retireMacKeys();
      if (out.deleted > 0) await appendSystem(s, crypto, 'rekey-mac-keys-retired', { deleted: out.deleted, secretsOnOldKeys: out.secretsOnOldKeys });
      return out;
    })
    .catch((err: unknown) => {
      // A client secret made under an old version committed while it was being deleted.
      if ((err as { code?: string }).code === '23503') throw new CliError('a client secret was just made under an old MAC key version; nothing was deleted: run rekey --retire-mac-keys again');
      throw err;
    });
  if (r.deleted > 0) await bus.publish(topics.macKey, '');
  io.err(
    `client secrets: ${r.deleted} old MAC key version${r.deleted === 1 ? '' : 's'} deleted; ${r.secretsOnOldKeys} usable secret${r.secretsOnOldKeys === 1 ? '' : 's'} ` +
      'still on an older version (moved at their next login; run rekey --retire-mac-keys later to delete it then)',
  );
}

async function appendSystem(s: TxStores, crypto: Crypto, eventType: string, metadata: Record<string, string | number>, key?: AuditKey) {
  await auditStore(s.tx, key ?? (await loadAuditKey(s, crypto))).append(s.tx, { actorType: 'system', actorId: null, eventType, metadata });
}

/** A unit of work committed: the seam tests hold or fail the command at. */
async function committed(run: Run) {
  run.steps++;
  await run.hooks?.step?.(run.steps);
}

/**
 * One project: start (new key current, old kept), batches until no row names the old key,
 * finish (old key deleted). Returns false when the project was deleted meanwhile.
 */
async function rekeyProject(run: Run, projectId: string, startedAt: Date): Promise<boolean> {
  const { store, crypto, bus } = run;
  // 1. Start, unless a killed run started it already.
  const started = await store.transaction(async (s) => {
    const p = await lockProject(s.tx, projectId);
    if (!p) return undefined;
    if (p.previousDataKeyId !== null) return p;
    if (p.createdAt >= startedAt) return p; // done by this run already (or created after it began: a fresh key)
    const id = randomUUID();
    const wrapped = await crypto.generateDataKey(dataKeyAad(id));
    await s.keys.insert({ id, purpose: 'project', rootKeyVersion: crypto.rootKeyVersion, wrapped });
    await s.tx`update projects set previous_data_key_id = data_key_id, data_key_id = ${id} where id = ${projectId}`;
    return { ...p, dataKeyId: id, previousDataKeyId: p.dataKeyId };
  });
  if (!started) return false;
  if (started.previousDataKeyId === null) return true;
  await bus.publish(topics.project, projectId);
  await committed(run);
  const from = started.previousDataKeyId;
  const to = started.dataKeyId;

  let moved = 0;
  for (;;) {
    // 2. Batches.
    for (;;) {
      const n = await store.transaction((s) => moveBatch(run, s, projectId, from, to));
      if (n.rows === 0) break;
      moved += n.blobs;
      run.blobs += n.blobs;
      for (const envId of n.environments) await bus.publish(topics.environment, envId);
      await committed(run);
    }
    // 3. Finish: fails (and is retried after more batches) while a row still names the old key.
    const done = await store
      .transaction(async (s) => {
        // The chain first: a writer holds it while its events row takes a key-share lock on
        // the project row; locking the project first deadlocked against it (40P01).
        await lockAuditChain(s.tx);
        const p = await lockProject(s.tx, projectId);
        if (!p || p.previousDataKeyId !== from) return true; // deleted, or finished by another run
        await s.tx`update projects set previous_data_key_id = null where id = ${projectId}`;
        await s.tx`delete from crypto_keys where id = ${from} and purpose = 'project'`;
        await appendSystem(s, crypto, 'rekey-project', { projectId, blobsReencrypted: moved });
        return true;
      })
      .catch((err: unknown) => {
        if ((err as { code?: string }).code === '23503') return false; // a late row under the old key
        throw err;
      });
    if (done) break;
  }
  await bus.publish(topics.project, projectId);
  await committed(run);
  return true;
}

async function lockProject(tx: Tx, projectId: string): Promise<ProjectKeys | undefined> {
  const [p] = await tx<ProjectKeys[]>`select p.id, p.data_key_id, p.previous_data_key_id, k.created_at
    from projects p join crypto_keys k on k.id = p.data_key_id where p.id = ${projectId} for update of p`;
  return p;
}

/** One batch: up to batchSize rows under `from` (secrets first, then versions), moved to `to`. */
async function moveBatch(run: Run, s: TxStores, projectId: string, from: string, to: string) {
  const { crypto, batchSize } = run;
  const [keys] = await s.tx<{ from: Buffer | null; to: Buffer | null }[]>`select
    (select wrapped from crypto_keys where id = ${from}) as from, (select wrapped from crypto_keys where id = ${to}) as to`;
  if (!keys?.from || !keys.to) return { rows: 0, blobs: 0, environments: [] as string[] };
  // Locked: a writer of the same row waits for this batch, or this batch for it (and then
  // skips the row if the writer moved it to the new key).
  const current = await s.tx<Row[]>`select s.id, s.id as secret_id, f.environment_id, s.folder_id, s.key, s.version, s.value_blob, s.comment_blob
    from secrets s join folders f on f.id = s.folder_id
    where s.data_key_id = ${from} order by s.id limit ${batchSize} for update of s`;
  const versions = current.length < batchSize
    ? await s.tx<Row[]>`select v.id, v.secret_id, f.environment_id, v.folder_id, v.key, v.version, v.value_blob, v.comment_blob
        from secret_versions v join folders f on f.id = v.folder_id
        where v.data_key_id = ${from} order by v.id limit ${batchSize - current.length} for update of v`
    : [];
  const rows = [...current.map((r) => ({ r, table: 'secrets' as const })), ...versions.map((r) => ({ r, table: 'secret_versions' as const }))];
  if (rows.length === 0) return { rows: 0, blobs: 0, environments: [] as string[] };

  const items: { blob: Buffer; aad: string; at: number; part: 'value' | 'comment' }[] = [];
  rows.forEach(({ r }, at) => {
    const where = { projectId, environmentId: r.environmentId, folderId: r.folderId, secretId: r.secretId, key: r.key, version: r.version };
    items.push({ blob: r.valueBlob, aad: secretAad('value', where), at, part: 'value' });
    if (r.commentBlob) items.push({ blob: r.commentBlob, aad: secretAad('comment', where), at, part: 'comment' });
  });
  const plain = await crypto.openMany(keys.from, dataKeyAad(from), items);
  const sealed = await crypto.sealMany(keys.to, dataKeyAad(to), items.map((i, n) => ({ plaintext: plain[n]!, aad: i.aad })));
  // Verified with the new key before anything is written.
  const reopened = await crypto.openMany(keys.to, dataKeyAad(to), items.map((i, n) => ({ blob: sealed[n]!, aad: i.aad })));
  if (reopened.some((v, n) => v !== plain[n])) throw new CliError(`project ${projectId}: a value did not read back under its new key`);

  const blobsOf = rows.map(() => ({ value: undefined as Buffer | undefined, comment: null as Buffer | null }));
  items.forEach((i, n) => (blobsOf[i.at]![i.part] = sealed[n]!));
  for (const [at, { r, table }] of rows.entries()) {
    const b = blobsOf[at]!;
    if (table === 'secrets') {
      await s.tx`update secrets set value_blob = ${b.value!}, comment_blob = ${b.comment}, data_key_id = ${to}
        where id = ${r.id} and data_key_id = ${from}`;
    } else {
      await s.tx`update secret_versions set value_blob = ${b.value!}, comment_blob = ${b.comment}, data_key_id = ${to}
        where id = ${r.id} and data_key_id = ${from}`;
    }
  }
  return { rows: rows.length, blobs: items.length, environments: [...new Set(rows.map(({ r }) => r.environmentId))] };
}
