// Incremental verification from keyed checkpoints (storage/audit.ts verifyIncremental):
// a verify reads only the entries after the newest checkpoint; a tampered entry after it
// is found there, one before it by a full walk; a forged, edited or rolled-back
// checkpoint is a broken chain; a walk told to stop keeps its progress. At scale (up to
// 1,000,000 entries): auditScale.test.ts.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { connectDatabase, type Sql } from '../../storage/db.js';
import type { Store } from '../../storage/index.js';
import { migrate } from '../../storage/migrate.js';
import { auditVerifier } from '../../server/domain/auditVerifier.js';
import { anchoredStore } from '../helpers/audit.js';
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
    const { store } = await anchoredStore(sql);
    await append(store, 50);

    const first = await store.auditVerify.incremental({ write: true, chunk: 20 });
    t.match(first, { ok: true, complete: true, entries: 50, from: 0, read: 50 }, 'the first verify walks every entry');
    const [cp] = await sql<{ lastId: number }[]>`select last_id from audit_checkpoints order by last_id desc limit 1`;
    const all = await ids(sql);
    t.equal(Number(cp!.lastId), all.at(-1), 'and leaves a checkpoint at the head');

    await append(store, 10);
    const next = await store.auditVerify.incremental({ write: true });
    t.match(next, { ok: true, entries: 60, from: all.at(-1) }, 'the next one starts from the checkpoint');
    t.equal(next.read, 11, 'and reads only the 10 new entries (and the one the checkpoint ends at)');
    t.match(await store.audit.verify(), { ok: true, entries: 60 }, 'a full walk agrees');

    const after = await ids(sql);
    // An entry after the newest checkpoint: found by the incremental walk.
    await append(store, 5);
    const victim = (await ids(sql)).at(-3)!;
    await sql`update audit_log set secret_key = 'edited' where id = ${victim}`;
    t.match(await store.auditVerify.incremental({ write: true }), { ok: false, reason: 'entry', brokenAt: victim }, 'an edit after the checkpoint is found');
    const [stillAt] = await sql<{ lastId: number }[]>`select max(last_id) as last_id from audit_checkpoints`;
    t.equal(Number(stillAt!.lastId), after.at(-1), 'no checkpoint is written past a break');
    await sql`update audit_log set secret_key = 'K2' where id = ${victim}`;
    t.match(await store.auditVerify.incremental({ write: true }), { ok: true, entries: 65 }, 'restored, it verifies');

    // An entry before the newest checkpoint: only a full walk reads it.
    const early = all[10]!;
    await sql`update audit_log set secret_key = 'edited' where id = ${early}`;
    t.match(await store.auditVerify.incremental({ write: true }), { ok: true }, 'an edit before the checkpoint is not read incrementally');
    t.match(await store.auditVerify.full(), { ok: false, reason: 'entry', brokenAt: early }, 'a full walk finds it');
    t.match(await store.audit.verify(), { ok: false, reason: 'entry', brokenAt: early }, 'as the one-snapshot walk does');
    await sql`update audit_log set secret_key = 'K10' where id = ${early}`;

    // A forged or edited checkpoint is a broken chain.
    const newest = async () => Number((await sql<{ id: number }[]>`select max(last_id) as id from audit_checkpoints`)[0]!.id);
    const head = await newest();
    await sql`update audit_checkpoints set digest = ${randomBytes(32)} where last_id = ${head}`;
    t.match(await store.auditVerify.incremental(), { ok: false, reason: 'checkpoint-invalid', brokenAt: head }, 'an edited checkpoint');
    await sql`delete from audit_checkpoints where last_id = ${head}`;
    const forgedAt = (await ids(sql)).at(-1)!;
    await sql`insert into audit_checkpoints (key_id, last_id, prev_last_id, entries, legacy_entries, last_mac, digest, pruned, mac)
      select key_id, ${forgedAt}, last_id, 65, 0, (select hash from audit_log where id = ${forgedAt}), digest, 0, mac from audit_checkpoints order by last_id desc limit 1`;
    t.match(await store.auditVerify.incremental(), { ok: false, reason: 'checkpoint-invalid', brokenAt: forgedAt }, 'a forged one (copied MAC)');
    await sql`delete from audit_checkpoints where last_id = ${forgedAt}`;
    t.match(await store.auditVerify.incremental({ write: true }), { ok: true, entries: 65 }, 'with only valid checkpoints left, it verifies');

    // The newest entries removed with the anchor rolled back: a valid checkpoint is past it.
    const [saved] = await sql`select * from audit_chain_head`;
    await append(store, 3);
    t.match(await store.auditVerify.incremental({ write: true }), { ok: true, entries: 68 });
    const tail = (await ids(sql)).slice(-3);
    await sql`delete from audit_log where id in ${sql(tail)}`;
    await sql`update audit_chain_head set entries = ${saved!.entries}, last_id = ${saved!.lastId}, last_mac = ${saved!.lastMac}, mac = ${saved!.mac}`;
    t.match(await store.auditVerify.incremental(), { ok: false, reason: 'checkpoint-ahead', brokenAt: tail.at(-1) }, 'a rollback of tail and anchor');
    t.match(await store.audit.verify(), { ok: true }, 'which a walk of the entries alone cannot see');
    t.match(await store.auditVerify.full(), { ok: false, reason: 'checkpoint-ahead', brokenAt: tail.at(-1) }, 'the full walk, reading the checkpoints too, does');
  });

  t.test(`a walk told to stop keeps its progress (${backend})`, async (t) => {
    const sql = await openSql(t, backend);
    const { store } = await anchoredStore(sql);
    await append(store, 100);
    let chunks = 0;
    const stopped = await store.auditVerify.incremental({ write: true, chunk: 30, checkpointEvery: 1_000_000, shouldContinue: () => ++chunks < 2 });
    t.match(stopped, { ok: null, complete: false, entries: 60, of: 100, read: 60 }, 'two chunks, then it stops');
    const resumed = await store.auditVerify.incremental({ write: true, chunk: 30 });
    t.match(resumed, { ok: true, entries: 100, read: 41 }, 'the next walk continues where it stopped');
    // An entry appended beyond the anchor (no anchor update): never anchored.
    const last = (await ids(sql)).at(-1)!;
    await sql`insert into audit_log (id, at, actor_type, event_type, metadata, prev_hash, hash, chain, key_id)
      select ${last + 1}, at, actor_type, event_type, metadata, hash, hash, chain, key_id from audit_log where id = ${last}`;
    t.match(await store.auditVerify.incremental(), { ok: false, reason: 'head-mismatch', found: { lastId: last + 1 } }, 'an entry past the anchor');
  });
}

t.test('the verifier answers within its wait, from the checkpoint, and stops walking once answered', async (t) => {
  const sql = await openSql(t, 'postgres');
  const { store } = await anchoredStore(sql);
  await append(store, 200);
  let release: (() => void) | undefined;
  let chunksRead = 0;
  const walks: Promise<unknown>[] = [];
  // A store whose walk is held after its first chunk, until the test releases it.
  const held: Pick<Store, 'auditVerify'> = {
    auditVerify: {
      ...store.auditVerify,
      incremental: (o) =>
        track(store.auditVerify.incremental({
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

for (const backend of ['postgres', 'embedded'] as Backend[]) {
  t.test(`the full walk reads every entry and checkpoint: what the incremental one cannot see (${backend})`, async (t) => {
    const sql = await openSql(t, backend);
    const { store } = await anchoredStore(sql);
    const checkpoints = async () => (await sql<{ lastId: number }[]>`select last_id from audit_checkpoints order by last_id`).map((r) => Number(r.lastId));
    for (let i = 0; i < 4; i++) {
      await append(store, 10);
      t.match(await store.auditVerify.incremental({ write: true }), { ok: true, entries: 10 * (i + 1) });
    }
    const points = await checkpoints();
    t.equal(points.length, 4, 'a checkpoint per verify that saw new entries');
    const [chain] = await sql<{ n: number }[]>`select count(*)::int as n from audit_checkpoints a join audit_checkpoints b on b.prev_last_id = a.last_id`;
    t.equal(chain!.n, 3, 'each names the one before it');
    t.match(await store.auditVerify.full(), { ok: true, complete: true, entries: 40, read: 40, checkpoints: 4 }, 'every entry and checkpoint read');
    const all = await ids(sql);
    await sql.unsafe(`create table cp_save as select * from audit_checkpoints; create table log_save as select * from audit_log`);
    const restore = () =>
      sql.unsafe(`delete from audit_checkpoints; insert into audit_checkpoints select * from cp_save;
        delete from audit_log; insert into audit_log select * from log_save`);

    // An old entry (before the newest checkpoint) deleted, or edited.
    await sql`delete from audit_log where id = ${all[5]!}`;
    t.match(await store.auditVerify.incremental(), { ok: true }, 'an old entry deleted: not read incrementally');
    t.match(await store.auditVerify.full(), { ok: false, reason: 'entry', brokenAt: all[6], entries: 39 }, 'the full walk names the next entry');
    await restore();
    await sql`update audit_log set metadata = '{"i": 99}' where id = ${all[2]!}`;
    t.match(await store.auditVerify.full(), { ok: false, reason: 'entry', brokenAt: all[2], entries: 40 }, 'an old entry edited');
    await restore();

    // A checkpoint edited: its MAC fails, wherever it stands.
    await sql`update audit_checkpoints set entries = entries + 1 where last_id = ${points[1]!}`;
    t.match(await store.auditVerify.incremental(), { ok: true }, 'an older checkpoint edited: the incremental walk starts from the newest');
    t.match(await store.auditVerify.full(), { ok: false, reason: 'checkpoint-invalid', brokenAt: points[1] }, 'the full walk names it');
    await restore();
    // A checkpoint valid under the key but moved: it no longer agrees with the chain.
    await sql`update audit_checkpoints set last_mac = ${randomBytes(32)} where last_id = ${points[2]!}`;
    t.match(await store.auditVerify.full(), { ok: false, reason: 'checkpoint-invalid', brokenAt: points[2] });
    await restore();

    // A checkpoint deleted: the next one names it.
    await sql`delete from audit_checkpoints where last_id = ${points[1]!}`;
    t.match(await store.auditVerify.full(), { ok: false, reason: 'checkpoint-missing', brokenAt: points[2] }, 'a middle one: its successor names it');
    await restore();
    await sql`delete from audit_checkpoints where last_id = ${points[0]!}`;
    t.match(await store.auditVerify.full(), { ok: false, reason: 'checkpoint-missing', brokenAt: points[1] }, 'the first one');
    await restore();
    // The newest deleted: whoever knew of it names it.
    await sql`delete from audit_checkpoints where last_id = ${points[3]!}`;
    t.match(await store.auditVerify.incremental({ expectCheckpoint: points[3] }), { ok: false, reason: 'checkpoint-missing', brokenAt: points[3] }, 'the newest one');
    await restore();
    t.match(await store.auditVerify.full(), { ok: true, entries: 40, checkpoints: 4 }, 'restored, everything holds');
  });
}

t.test('the verifier: full walks in the background, stored keyed, answered beside the incremental verdict', async (t) => {
  const sql = await openSql(t, 'postgres');
  const { store } = await anchoredStore(sql);
  await append(store, 30);
  const walked: string[] = [];
  const verifier = auditVerifier({ store, waitMs: 60_000, onFullWalk: (s) => walked.push(s.runId) });
  t.teardown(() => verifier.close());
  t.match(await verifier.verify(), { ok: true, entries: 30, incremental: { ok: true }, fullWalk: { last: null, running: null } }, 'no full walk yet');

  const first = verifier.requestFull();
  const queued = verifier.requestFull();
  t.not(queued.runId, first.runId, 'asked while one runs: a walk after it (the running one may predate what is asked about)');
  t.equal(verifier.requestFull().runId, queued.runId, 'and one queued walk serves every request made meanwhile');
  t.match(await verifier.finished(first.runId), { runId: first.runId, ok: true, entries: 30, read: 30 });
  t.match(await verifier.finished(queued.runId), { runId: queued.runId, ok: true });
  t.same(walked, [first.runId, queued.runId], 'each told when it ends');
  t.match(await verifier.verify(), { ok: true, fullWalk: { last: { runId: queued.runId, ok: true, entries: 30 } } });
  await sql.unsafe(`create table run_save as select * from audit_verify_runs`);

  // An entry before the checkpoints edited: the incremental walk does not read it; the full walk names it; the answer is broken.
  const early = (await ids(sql))[3]!;
  await sql`update audit_log set secret_key = 'edited' where id = ${early}`;
  t.match(await verifier.verify(), { ok: true, incremental: { ok: true } }, 'until a full walk, only the incremental verdict');
  const second = verifier.requestFull();
  t.match(await verifier.finished(second.runId), { ok: false, reason: 'entry', brokenAt: early });
  t.match(
    await verifier.verify(),
    { ok: false, reason: 'entry', brokenAt: early, entries: 30, incremental: { ok: true }, fullWalk: { last: { runId: second.runId, ok: false, brokenAt: early } } },
    'broken if either walk found a break',
  );
  const other = auditVerifier({ store, waitMs: 60_000 });
  t.match(await other.verify(), { ok: false, brokenAt: early, fullWalk: { last: { runId: second.runId } } }, 'another replica answers the stored verdict');

  // A database writer cannot turn the stored verdict into an "ok".
  await sql`update audit_verify_runs set ok = true, broken_at = null, reason = null`;
  t.match(await other.verify(), { ok: false, reason: 'full-walk-record-invalid', fullWalk: { recordInvalid: true } }, 'an edited verdict: its MAC fails');
  await sql.unsafe(`delete from audit_verify_runs; insert into audit_verify_runs select * from run_save`);
  t.match(await verifier.verify(), { ok: false, brokenAt: early }, 'an older valid "ok" put back: the replica that walked last keeps its newer verdict');
  t.match(await other.verify(), { ok: true, fullWalk: { last: { runId: queued.runId } } }, '(a replica that did not walk sees the older one until the next walk)');

  await sql`update audit_log set secret_key = 'K3' where id = ${early}`;
  const third = verifier.requestFull();
  t.match(await verifier.finished(third.runId), { ok: true });
  t.match(await verifier.verify(), { ok: true, fullWalk: { last: { runId: third.runId, ok: true } } }, 'restored and walked again: ok');
});

t.test('the background walk runs at start-up and stops at shutdown', async (t) => {
  const sql = await openSql(t, 'postgres');
  const { store } = await anchoredStore(sql);
  await append(store, 20);
  let done: (runId: string) => void;
  const finished = new Promise<string>((r) => (done = r));
  const verifier = auditVerifier({ store, waitMs: 60_000, onFullWalk: (s) => done(s.runId) });
  verifier.startBackground(3_600_000);
  const runId = await finished;
  t.match(await verifier.verify(), { ok: true, fullWalk: { last: { runId, ok: true, entries: 20 } } }, 'a full walk at start-up, its verdict reported');
  await verifier.close();
  t.match(await verifier.finished(verifier.requestFull().runId), { stopped: true }, 'after close, nothing walks');
});
