// rekey: gives every project a fresh data key, re-encrypts every value and comment of
// every version under it, and destroys the old data key. One transaction per project
// (the batch): a kill leaves each project either done or untouched, and the next run
// finishes the unfinished run (a 'rekey-started' audit entry with no 'rekey-finished'
// after it; a project is done when its data key is younger than that entry). Answers "an old backup and the old
// root key must not open what is written after the incident": rotate-key changes the
// root key only, the data keys stay.
//
// Scope today: project data keys, with the service stopped (like rotate-key). The
// client-secret MAC key (system key) and the audit key are not re-keyed yet.
import { randomUUID } from 'node:crypto';
import { createCrypto, type Crypto } from '../../crypto/index.js';
import { auditStore } from '../../storage/audit.js';
import type { Database, Queryable } from '../../storage/db.js';
import { createStore, type TxStores } from '../../storage/index.js';
import { migrate } from '../../storage/migrate.js';
import { rootKeySpec } from '../config.js';
import { AuditTrailError, loadAuditKey } from '../domain/audit.js';
import { dataKeyAad, openKeyring } from '../domain/keyring.js';
import { secretAad } from '../domain/secrets.js';
import { CliError, EXIT_OK, parse, refuseKeyLikeArguments, type Command, type Context } from './command.js';
import { describeTarget, databaseTarget, openDatabase, serviceConfig } from './database.js';

const HELP = `Usage: vault-standalone rekey

Gives every project a fresh random data key: every value and comment of every
version is re-encrypted under it (and verified with it), then the old data key is
deleted. One transaction per project; if the command is killed, run it again: it
finishes the run (projects already done are skipped).

Use it after an incident where the root key (ENCRYPTION_KEY or the token) and a
database backup may both have leaked: rotate-key first (a new root key), then rekey
(new data keys), so that backup and old key open nothing written afterwards.

Stop the service first (every replica); the command refuses while other
vault-standalone connections to the database exist.

Environment: the service's own (KEY_PROVIDER, ENCRYPTION_KEY or PKCS11_*, DATABASE_URL
or DATA_DIR).

Not re-keyed yet: the system key (client-secret MACs, the canary) and the audit key.

Exit codes: 0 done, 1 failure (projects done so far stay done), 2 usage error.`;

const APP_NAME = 'vault-standalone';

interface Row {
  source: 'secrets' | 'secret_versions';
  id: string;
  secretId: string;
  environmentId: string;
  folderId: string;
  key: string;
  version: number;
  valueBlob: Buffer;
  commentBlob: Buffer | null;
}

export const rekey: Command = {
  name: 'rekey',
  summary: 'give every project a fresh data key, re-encrypting every version (resumable)',
  help: HELP,
  async run(argv: string[], { env, io, hooks }: Context): Promise<number> {
    refuseKeyLikeArguments(argv);
    const o = parse(argv, {});
    if (o.help) {
      io.out(HELP);
      return EXIT_OK;
    }
    const config = await serviceConfig(env, io);
    io.err(`re-keying the projects of the ${describeTarget(databaseTarget(env))}`);
    const db = await openDatabase(env, io, 1);
    let crypto: Crypto | undefined;
    try {
      await migrate(db.sql);
      await refuseWhileServiceRuns(db.kind, db.sql);
      const store = createStore(db.sql);
      const versions = await store.keys.rootKeyVersions();
      if (versions.length !== 1) throw new CliError('this database holds no keys yet, or a rotation is unfinished: nothing to re-key');
      crypto = await createCrypto({ rootKeys: [rootKeySpec(config, versions[0]!)], threads: 1 });
      config.pkcs11?.pin.fill(0);
      await openKeyring(store, crypto); // the canary: the right root key, or stop here
      await loadAuditKey(store, crypto).catch((err: unknown) => {
        throw err instanceof AuditTrailError ? new CliError(`${err.message}. Nothing was changed.`) : err;
      });

      const lastRun = async () =>
        (await db.sql<{ id: string; at: Date; eventType: string }[]>`select id, at, event_type from audit_log
          where event_type in ('rekey-started', 'rekey-finished') order by id desc limit 1`)[0];
      let run = await lastRun();
      const resuming = run?.eventType === 'rekey-started';
      if (resuming) io.err(`resuming the unfinished run started at ${run!.at.toISOString()}`);
      else {
        await store.transaction(async (s) => {
          await auditStore(s.tx, await loadAuditKey(s, crypto!)).append(s.tx, { actorType: 'system', actorId: null, eventType: 'rekey-started', metadata: {} });
        });
        run = await lastRun();
      }
      const startedAt = run!.at;
      const todo = await db.sql<{ id: string }[]>`select p.id from projects p join crypto_keys k on k.id = p.data_key_id
        where k.created_at < ${startedAt} order by p.created_at, p.id`;
      let projects = 0;
      let blobs = 0;
      for (const p of todo) {
        blobs += await store.transaction((s) => rekeyProject(s, crypto!, p.id));
        projects++;
        await hooks?.step?.(projects);
      }
      await store.transaction(async (s) => {
        await auditStore(s.tx, await loadAuditKey(s, crypto!)).append(s.tx, {
          actorType: 'system', actorId: null, eventType: 'rekey-finished', metadata: { projects, blobsReencrypted: blobs },
        });
      });
      io.out(`re-keyed ${projects} project${projects === 1 ? '' : 's'} (${blobs} values and comments re-encrypted; old data keys deleted)`);
      return EXIT_OK;
    } finally {
      await crypto?.close().catch(() => {});
      await db.close().catch(() => {});
    }
  },
};

/** One project, in one transaction: new key, every blob re-sealed and verified, old key deleted. Returns the blob count. */
async function rekeyProject(s: TxStores, crypto: Crypto, projectId: string): Promise<number> {
  const [project] = await s.tx<{ id: string; dataKeyId: string; wrapped: Buffer }[]>`select p.id, p.data_key_id, k.wrapped
    from projects p join crypto_keys k on k.id = p.data_key_id where p.id = ${projectId} for update of p`;
  if (!project) return 0; // deleted meanwhile
  const rows = await s.tx<Row[]>`
    select 'secrets' as source, s.id, s.id as secret_id, f.environment_id, s.folder_id, s.key, s.version, s.value_blob, s.comment_blob
      from secrets s join folders f on f.id = s.folder_id join environments e on e.id = f.environment_id
      where e.project_id = ${projectId}
    union all
    select 'secret_versions', v.id, v.secret_id, f.environment_id, v.folder_id, v.key, v.version, v.value_blob, v.comment_blob
      from secret_versions v join folders f on f.id = v.folder_id join environments e on e.id = f.environment_id
      where e.project_id = ${projectId}`;
  const items: { blob: Buffer; aad: string; row: Row; part: 'value' | 'comment' }[] = [];
  for (const r of rows) {
    const at = { projectId, environmentId: r.environmentId, folderId: r.folderId, secretId: r.secretId, key: r.key, version: r.version };
    items.push({ blob: r.valueBlob, aad: secretAad('value', at), row: r, part: 'value' });
    if (r.commentBlob) items.push({ blob: r.commentBlob, aad: secretAad('comment', at), row: r, part: 'comment' });
  }
  const oldAad = dataKeyAad(project.dataKeyId);
  const plain = items.length ? await crypto.openMany(project.wrapped, oldAad, items) : [];
  const newId = randomUUID();
  const newAad = dataKeyAad(newId);
  const wrapped = await crypto.generateDataKey(newAad);
  await s.keys.insert({ id: newId, purpose: 'project', rootKeyVersion: crypto.rootKeyVersion, wrapped });
  const sealed = items.length ? await crypto.sealMany(wrapped, newAad, items.map((i, n) => ({ plaintext: plain[n]!, aad: i.aad }))) : [];
  // Verified with the new key before anything old goes.
  const reopened = items.length ? await crypto.openMany(wrapped, newAad, items.map((i, n) => ({ blob: sealed[n]!, aad: i.aad }))) : [];
  if (reopened.some((v, n) => v !== plain[n])) throw new CliError(`project ${projectId}: a value did not read back under its new key`);
  for (const [n, i] of items.entries()) {
    const blob = sealed[n]!;
    const id = i.row.id;
    if (i.row.source === 'secrets') {
      if (i.part === 'value') await s.tx`update secrets set value_blob = ${blob} where id = ${id}`;
      else await s.tx`update secrets set comment_blob = ${blob} where id = ${id}`;
    } else if (i.part === 'value') await s.tx`update secret_versions set value_blob = ${blob} where id = ${id}`;
    else await s.tx`update secret_versions set comment_blob = ${blob} where id = ${id}`;
  }
  await s.tx`update projects set data_key_id = ${newId} where id = ${projectId}`;
  await s.tx`delete from crypto_keys where id = ${project.dataKeyId}`;
  const auditKey = await loadAuditKey(s, crypto);
  await auditStore(s.tx, auditKey).append(s.tx, {
    actorType: 'system',
    actorId: null,
    eventType: 'rekey-project',
    metadata: { projectId, blobsReencrypted: items.length },
  });
  return items.length;
}

async function refuseWhileServiceRuns(kind: Database['kind'], sql: Queryable): Promise<void> {
  if (kind !== 'postgres') return;
  await sql`select pg_stat_clear_snapshot()`;
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from pg_stat_activity
    where datname = current_database() and application_name = ${APP_NAME} and pid <> pg_backend_pid()`;
  if ((row?.n ?? 0) > 0) {
    throw new CliError(`${row!.n} other ${APP_NAME} connection(s) to this database: stop the service (every replica) first. Nothing was changed.`);
  }
}
