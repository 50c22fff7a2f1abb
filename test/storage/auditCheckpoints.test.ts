// Incremental verification from keyed checkpoints (storage/audit.ts verifyIncremental):
// a verify reads only the entries after the newest checkpoint; a tampered entry after it
// is found there, one before it by a full walk; a forged, edited or rolled-back
// checkpoint is a broken chain; a walk told to stop keeps its progress. At scale (up to
// 1,000,000 entries): auditScale.test.ts.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { AuditKey } from '../../storage/audit.js';
import { connectDatabase, type Sql } from '../../storage/db.js';
import { createStore, type Store } from '../../storage/index.js';
import { migrate } from '../../storage/migrate.js';
import { auditVerifier } from '../../server/domain/audit.js';
import { freshDatabase } from '../helpers/db.js';
import { seedEmbeddedDataDir } from '../helpers/embedded.js';

type Backend = 'postgres' | 'embedded';

async function openSql(t: Test, backend: Backend): Promise<Sql> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-audit-cp-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const databaseUrl = backend === 'postgres' ? await freshDatabase(t) : await seedEmbeddedDataDir(dataDir).then(() => undefined);
  const db = await connectDatabase({ databaseUrl, dataDir, poolSize: 10 });
  t.teardown(() => db.close());
  await migrate(db.sql);
  return db.sql;
}

interface TestKey extends AuditKey {
  mac: (m: string) => Buffer;
  /** MACs computed (entries, anchors, checkpoints). */
  computed: number;
}

async function anchored(sql: Sql): Promise<{ store: Store; key: TestKey }> {
  const keyId = randomUUID();
  await sql`insert into crypto_keys (id, purpose, root_key_version, wrapped) values (${keyId}, 'audit', 1, ${randomBytes(60)})`;
  const secret = randomBytes(32);
  const mac = (m: string) => createHmac('sha256', secret).update(m).digest();
  const key: TestKey = {
    keyId,
    mac,
    computed: 0,
    macs: async (ms) => {
      key.computed += ms.length;
      return ms.map(mac);
    },
  };
  const store = createStore(sql, { auditKey: key });
  await store.transaction(async (s) => {
    await s.audit.lockChain(s.tx);
    await s.audit.createAnchor(s.tx, key);
  });
  return { store, key };
}

const append = (store: Store, n: number) =>
  store.transaction((s) =>
    s.audit.appendMany(
      s.tx,
      Array.from({ length: n }, (_, i) => ({ actorType: 'system' as const, actorId: null, eventType: 'test', secretKey: `K${i}`, metadata: { i } })),
    ),
  );

const ids = async (sql: Sql) => (await sql<{ id: number }[]>`select id from audit_log order by id`).map((r) => Number(r.id));

for (const backend of ['postgres', 'embedded'] as Backend[]) {
  t.test(`verify continues from the newest keyed checkpoint (${backend})`, async (t) => {
    const sql = await openSql(t, backend);
    const { store } = await anchored(sql);
    await append(store, 50);

    const first = await store.audit.verifyIncremental({ write: true, chunk: 20 });
    t.match(first, { ok: true, complete: true, entries: 50, from: 0, read: 50 }, 'the first verify walks every entry');
    const [cp] = await sql<{ lastId: number }[]>`select last_id from audit_checkpoints order by last_id desc limit 1`;
    const all = await ids(sql);
    t.equal(Number(cp!.lastId), all.at(-1), 'and leaves a checkpoint at the head');

    await append(store, 10);
    const next = await store.audit.verifyIncremental({ write: true });
    t.match(next, { ok: true, entries: 60, from: all.at(-1) }, 'the next one starts from the checkpoint');
    t.equal(next.read, 11, 'and reads only the 10 new entries (and the one the checkpoint ends at)');
    t.match(await store.audit.verify(), { ok: true, entries: 60 }, 'a full walk agrees');

    const after = await ids(sql);
    // An entry after the newest checkpoint: found by the incremental walk.
    await append(store, 5);
    const victim = (await ids(sql)).at(-3)!;
    await sql`update audit_log set secret_key = 'edited' where id = ${victim}`;
    t.match(await store.audit.verifyIncremental({ write: true }), { ok: false, reason: 'entry', brokenAt: victim }, 'an edit after the checkpoint is found');
    const [stillAt] = await sql<{ lastId: number }[]>`select max(last_id) as last_id from audit_checkpoints`;
    t.equal(Number(stillAt!.lastId), after.at(-1), 'no checkpoint is written past a break');
    await sql`update audit_log set secret_key = 'K2' where id = ${victim}`;
    t.match(await store.audit.verifyIncremental({ write: true }), { ok: true, entries: 65 }, 'restored, it verifies');

    // An entry before the newest checkpoint: only a full walk reads it.
    const early = all[10]!;
    await sql`update audit_log set secret_key = 'edited' where id = ${early}`;
    t.match(await store.audit.verifyIncremental({ write: true }), { ok: true }, 'an edit before the checkpoint is not read incrementally');
    t.match(await store.audit.verifyIncremental({ full: true }), { ok: false, reason: 'entry', brokenAt: early }, 'a full walk finds it');
    t.match(await store.audit.verify(), { ok: false, reason: 'entry', brokenAt: early }, 'as the one-snapshot walk does');
    await sql`update audit_log set secret_key = 'K10' where id = ${early}`;

    // A forged or edited checkpoint is a broken chain.
    const newest = async () => Number((await sql<{ id: number }[]>`select max(last_id) as id from audit_checkpoints`)[0]!.id);
    const head = await newest();
    await sql`update audit_checkpoints set digest = ${randomBytes(32)} where last_id = ${head}`;
    t.match(await store.audit.verifyIncremental(), { ok: false, reason: 'checkpoint-invalid', brokenAt: head }, 'an edited checkpoint');
    await sql`delete from audit_checkpoints where last_id = ${head}`;
    const forgedAt = (await ids(sql)).at(-1)!;
    await sql`insert into audit_checkpoints (key_id, last_id, entries, legacy_entries, last_mac, digest, pruned, mac)
      select key_id, ${forgedAt}, 65, 0, (select hash from audit_log where id = ${forgedAt}), digest, 0, mac from audit_checkpoints order by last_id desc limit 1`;
    t.match(await store.audit.verifyIncremental(), { ok: false, reason: 'checkpoint-invalid', brokenAt: forgedAt }, 'a forged one (copied MAC)');
    await sql`delete from audit_checkpoints where last_id = ${forgedAt}`;
    t.match(await store.audit.verifyIncremental({ write: true }), { ok: true, entries: 65 }, 'with only valid checkpoints left, it verifies');

    // The newest entries removed with the anchor rolled back: a valid checkpoint is past it.
    const [saved] = await sql`select * from audit_chain_head`;
    await append(store, 3);
    t.match(await store.audit.verifyIncremental({ write: true }), { ok: true, entries: 68 });
    const tail = (await ids(sql)).slice(-3);
    await sql`delete from audit_log where id in ${sql(tail)}`;
    await sql`update audit_chain_head set entries = ${saved!.entries}, last_id = ${saved!.lastId}, last_mac = ${saved!.lastMac}, mac = ${saved!.mac}`;
    t.match(await store.audit.verifyIncremental(), { ok: false, reason: 'checkpoint-ahead', brokenAt: tail.at(-1) }, 'a rollback of tail and anchor');
    t.match(await store.audit.verify(), { ok: true }, 'which the full walk alone cannot see');
  });

  t.test(`a walk told to stop keeps its progress (${backend})`, async (t) => {
    const sql = await openSql(t, backend);
    const { store } = await anchored(sql);
    await append(store, 100);
    let chunks = 0;
    const stopped = await store.audit.verifyIncremental({ write: true, chunk: 30, checkpointEvery: 1_000_000, shouldContinue: () => ++chunks < 2 });
    t.match(stopped, { ok: null, complete: false, entries: 60, of: 100, read: 60 }, 'two chunks, then it stops');
    const resumed = await store.audit.verifyIncremental({ write: true, chunk: 30 });
    t.match(resumed, { ok: true, entries: 100, read: 41 }, 'the next walk continues where it stopped');
    // An entry appended beyond the anchor (no anchor update): never anchored.
    const last = (await ids(sql)).at(-1)!;
    await sql`insert into audit_log (id, at, actor_type, event_type, metadata, prev_hash, hash, chain, key_id)
      select ${last + 1}, at, actor_type, event_type, metadata, hash, hash, chain, key_id from audit_log where id = ${last}`;
    t.match(await store.audit.verifyIncremental(), { ok: false, reason: 'head-mismatch', found: { lastId: last + 1 } }, 'an entry past the anchor');
  });
}

t.test('the verifier answers within its wait, from the checkpoint, and stops walking once answered', async (t) => {
  const sql = await openSql(t, 'postgres');
  const { store } = await anchored(sql);
  await append(store, 200);
  let release: (() => void) | undefined;
  let chunksRead = 0;
  const walks: Promise<unknown>[] = [];
  // A store whose walk is held after its first chunk, until the test releases it.
  const held: Pick<Store, 'audit'> = {
    audit: {
      ...store.audit,
      verifyIncremental: (o) =>
        track(store.audit.verifyIncremental({
          ...o,
          chunk: 50,
          pause: () => {
            chunksRead++;
            return new Promise<void>((r) => (release = r));
          },
        })),
    },
  };
  const track = <T,>(p: Promise<T>): Promise<T> => {
    walks.push(p);
    return p;
  };
  let clock = 1_000_000;
  const verifier = auditVerifier({ store: held, waitMs: 50, now: () => clock });
  const first = await verifier.verify();
  t.match(first, { ok: null, inProgress: true, entries: 50, of: 200, verifiedFrom: 0 }, 'no verdict within the wait: the progress so far');
  t.equal(chunksRead, 1);
  release!();
  // Answered: the walk stops at its next chunk, nobody waits for it.
  t.match(await walks[0], { ok: null, complete: false, entries: 100 }, 'the walk stopped after the chunk it was reading');
  t.equal(chunksRead, 1, 'and did not pause for another: it did not go on after the answer');
  const direct = auditVerifier({ store, waitMs: 60_000, now: () => clock });
  const done = await direct.verify();
  t.match(done, { ok: true, entries: 200, inProgress: false, ageSeconds: 0, verifiedFrom: 100 }, 'a verdict, continued from the kept progress');
  clock += 120_000;
  await append(store, 1);
  const later = await direct.verify();
  t.match(later, { ok: true, entries: 201, ageSeconds: 0, verifiedFrom: 200 }, 'the next visit reads one entry past the checkpoint');
});
