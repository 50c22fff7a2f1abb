// The keyed, anchored audit chain against everything a writer without the key can do:
// edit any column, delete any entry (the newest ones too), re-hash with the old plain
// SHA-256 rule, edit or drop the anchor, roll the whole trail back. The MAC is a test
// HMAC here (the crypto workers' mac is tested in test/crypto/); the service-level
// tests run the same attacks with the real key.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { AuditChainError, type AuditKey } from '../../storage/audit.js';
import { connectDatabase, type Sql } from '../../storage/db.js';
import { createStore, type Store } from '../../storage/index.js';
import { loadMigrations, migrate } from '../../storage/migrate.js';
import { auditIds, rechainWithSha256, restoreTrail, saveTrail } from '../helpers/audit.js';
import { freshDatabase } from '../helpers/db.js';
import { seedEmbeddedDataDir } from '../helpers/embedded.js';

type Backend = 'postgres' | 'embedded';

async function openSql(t: Test, backend: Backend): Promise<Sql> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-audit-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const databaseUrl = backend === 'postgres' ? await freshDatabase(t) : await seedEmbeddedDataDir(dataDir).then(() => undefined);
  const db = await connectDatabase({ databaseUrl, dataDir, poolSize: 10 });
  t.teardown(() => db.close());
  return db.sql;
}

/** A key as the crypto workers would hold it: a crypto_keys row and an HMAC only this test knows. */
async function auditKey(sql: Sql): Promise<AuditKey> {
  const keyId = randomUUID();
  await sql`insert into crypto_keys (id, purpose, root_key_version, wrapped) values (${keyId}, 'audit', 1, ${randomBytes(60)})`;
  const secret = randomBytes(32);
  return { keyId, macs: async (ms) => ms.map((m) => createHmac('sha256', secret).update(m).digest()) };
}

async function anchored(sql: Sql): Promise<{ store: Store; key: AuditKey }> {
  const key = await auditKey(sql);
  const store = createStore(sql, { auditKey: key });
  await store.transaction(async (s) => {
    await s.audit.lockChain(s.tx);
    await s.audit.createAnchor(s.tx, key);
  });
  return { store, key };
}

const PROJECT = '5d1f7c4e-1111-4000-8000-000000000001';
let n = 0;
const append = (store: Store) =>
  store.transaction((s) =>
    s.audit.append(s.tx, {
      actorType: 'user',
      actorId: randomUUID(),
      eventType: 'update-secret',
      projectId: PROJECT,
      environment: 'prod',
      secretPath: '/app',
      secretKey: `KEY_${++n}`,
      secretVersion: 2,
      metadata: { count: 1, batch: false, note: 'ünïcode ✓', nothing: null },
      ip: '10.0.0.1',
    }),
  );

async function appendMany(store: Store, count: number) {
  for (let i = 0; i < count; i++) await append(store);
}

const broken = (brokenAt: number, entries: number) => ({ ok: false, reason: 'entry', brokenAt, entries });

for (const backend of ['postgres', 'embedded'] as Backend[]) {
  t.test(`the keyed chain (${backend})`, async (t) => {
    const sql = await openSql(t, backend);
    await migrate(sql);
    const { store, key } = await anchored(sql);
    const verify = () => store.audit.verify();

    await t.test('an empty trail verifies; appends extend it and move the head', async (t) => {
      t.match(await verify(), { ok: true, entries: 0, head: { entries: 0, legacyEntries: 0, lastId: 0 } });
      await appendMany(store, 12);
      const ids = await auditIds(sql);
      const [last] = await sql<{ hash: Buffer }[]>`select hash from audit_log order by id desc limit 1`;
      const r = await verify();
      t.match(r, { ok: true, entries: 12, head: { keyId: key.keyId, entries: 12, legacyEntries: 0, lastId: ids.at(-1) } });
      t.ok(r.ok && r.head.lastMac.equals(last!.hash), 'the head is the last entry MAC');
      await saveTrail(sql, 'pristine');
    });

    await t.test('an edit of any column of an entry is named', async (t) => {
      await append(store);
      await saveTrail(sql, 'columns');
      const ids = await auditIds(sql);
      const middle = ids[5]!;
      const newest = ids.at(-1)!;
      const edits: Array<[string, (id: number) => Promise<unknown>]> = [
        ['at, by one microsecond', (id) => sql`update audit_log set at = at + interval '1 microsecond' where id = ${id}`],
        ['actor_type', (id) => sql`update audit_log set actor_type = 'system' where id = ${id}`],
        ['actor_id', (id) => sql`update audit_log set actor_id = ${randomUUID()} where id = ${id}`],
        ['event_type', (id) => sql`update audit_log set event_type = 'read-secret' where id = ${id}`],
        ['project_id', (id) => sql`update audit_log set project_id = ${randomUUID()} where id = ${id}`],
        ['environment', (id) => sql`update audit_log set environment = 'dev' where id = ${id}`],
        ['secret_path', (id) => sql`update audit_log set secret_path = '/' where id = ${id}`],
        ['secret_key', (id) => sql`update audit_log set secret_key = 'OTHER' where id = ${id}`],
        ['secret_version', (id) => sql`update audit_log set secret_version = 1 where id = ${id}`],
        ['metadata, a field added', (id) => sql`update audit_log set metadata = metadata || '{"role":"admin"}'::jsonb where id = ${id}`],
        ['metadata, 1 written as 1.0', (id) => sql`update audit_log set metadata = jsonb_set(metadata, '{count}', '1.0'::jsonb) where id = ${id}`],
        ['ip', (id) => sql`update audit_log set ip = '6.6.6.6' where id = ${id}`],
        ['prev_hash', (id) => sql`update audit_log set prev_hash = ${randomBytes(32)} where id = ${id}`],
        ['hash', (id) => sql`update audit_log set hash = ${randomBytes(32)} where id = ${id}`],
        ['chain', (id) => sql`update audit_log set chain = 1 where id = ${id}`],
      ];
      for (const [what, edit] of edits) {
        for (const id of [middle, newest]) {
          await edit(id);
          t.same(await verify(), broken(id, ids.length), `${what} of entry ${id === newest ? 'the newest' : id}`);
          await restoreTrail(sql, 'columns');
        }
      }
      // The id: the newest entry moved up by one (ids are gap-free), order and links unchanged.
      await sql`update audit_log set id = ${newest + 1} where id = ${newest}`;
      t.same(await verify(), broken(newest + 1, ids.length), 'id');
      await restoreTrail(sql, 'columns');
      t.match(await verify(), { ok: true, entries: ids.length }, 'the restored trail verifies: each edit alone broke it');
    });

    await t.test('a deleted entry in the middle is named by the next one', async (t) => {
      const ids = await auditIds(sql);
      await sql`delete from audit_log where id = ${ids[3]!}`;
      t.same(await verify(), broken(ids[4]!, ids.length - 1));
      await sql`delete from audit_log where id = ${ids[0]!}`;
      t.same(await verify(), broken(ids[1]!, ids.length - 2), 'the very first one too');
      await restoreTrail(sql, 'columns');
    });

    await t.test('the newest entry, or the newest N, deleted: the anchor does not match', async (t) => {
      const ids = await auditIds(sql);
      for (const k of [1, 2, 5, ids.length]) {
        await sql`delete from audit_log where id in ${sql(ids.slice(-k))}`;
        t.same(
          await verify(),
          {
            ok: false,
            entries: ids.length - k,
            brokenAt: null,
            reason: 'head-mismatch',
            anchored: { entries: ids.length, lastId: ids.at(-1) },
            found: { entries: ids.length - k, lastId: k === ids.length ? 0 : ids.at(-k - 1) },
          },
          `the newest ${k} deleted`,
        );
        await restoreTrail(sql, 'columns');
      }
      t.match(await verify(), { ok: true });
    });

    await t.test('an entry edited and every later hash recomputed with plain SHA-256', async (t) => {
      const ids = await auditIds(sql);
      const victim = ids[4]!;
      await sql`update audit_log set event_type = 'nothing-happened' where id = ${victim}`;
      await rechainWithSha256(sql, victim);
      t.same(await verify(), broken(victim, ids.length), 'links hold again, the MAC does not');
      await restoreTrail(sql, 'columns');

      // Also claim that every entry predates the key, and re-hash the whole trail.
      await sql`update audit_log set event_type = 'nothing-happened' where id = ${victim}`;
      await rechainWithSha256(sql, ids[0]!, { markLegacy: true });
      t.match(await verify(), { ok: false, brokenAt: null, reason: 'head-mismatch' }, 'all of it marked legacy: the anchor does not match');
      await restoreTrail(sql, 'columns');
    });

    await t.test('an edit of any column of the anchor is detected, and no append extends it', async (t) => {
      const ids = await auditIds(sql);
      const [otherKey] = await sql<{ id: string }[]>`insert into crypto_keys (id, purpose, root_key_version, wrapped)
        values (${randomUUID()}, 'system', 1, ${randomBytes(60)}) returning id`;
      // Where the anchor points is covered by its MAC, which also covers the entry it
      // names: an anchor pointing elsewhere than the chain ends is a head-mismatch, one
      // pointing at the right end with a MAC that does not hold is anchor-invalid.
      const edits: Array<[string, () => Promise<unknown>, 'anchor-invalid' | 'head-mismatch']> = [
        ['key_id', () => sql`update audit_chain_head set key_id = ${otherKey!.id}`, 'anchor-invalid'],
        ['entries', () => sql`update audit_chain_head set entries = entries - 1`, 'head-mismatch'],
        ['legacy_entries', () => sql`update audit_chain_head set legacy_entries = 1`, 'head-mismatch'],
        ['last_id', () => sql`update audit_chain_head set last_id = last_id - 1`, 'head-mismatch'],
        ['last_mac', () => sql`update audit_chain_head set last_mac = ${randomBytes(32)}`, 'head-mismatch'],
        ['mac', () => sql`update audit_chain_head set mac = ${randomBytes(32)}`, 'anchor-invalid'],
      ];
      for (const [what, edit, reason] of edits) {
        await edit();
        t.match(await verify(), { ok: false, entries: ids.length, brokenAt: null, reason }, what);
        await t.rejects(append(store), new AuditChainError('anchor-invalid'), `${what}: an append refuses to extend it`);
        t.same(await auditIds(sql), ids, 'and writes nothing');
        await restoreTrail(sql, 'columns');
      }
      await sql`delete from audit_chain_head`;
      t.same(await verify(), { ok: false, entries: ids.length, brokenAt: null, reason: 'anchor-missing' }, 'the anchor deleted');
      await t.rejects(append(store), new AuditChainError('anchor-missing'));
      await t.rejects(
        store.transaction(async (s) => {
          await s.audit.lockChain(s.tx);
          await s.audit.createAnchor(s.tx, key);
        }),
        new AuditChainError('keyed-entries-exist'),
        'nor is it anchored anew over keyed entries',
      );
      await restoreTrail(sql, 'columns');
      t.match(await verify(), { ok: true, entries: ids.length });
    });

    await t.test('a truncated tail with an anchor made to match it is not made valid by the next append', async (t) => {
      const ids = await auditIds(sql);
      const [kept] = await sql<{ id: number; hash: Buffer }[]>`select id, hash from audit_log where id = ${ids.at(-3)!}`;
      await sql`delete from audit_log where id > ${kept!.id}`;
      await sql`update audit_chain_head set entries = ${ids.length - 2}, last_id = ${kept!.id}, last_mac = ${kept!.hash}`;
      await t.rejects(append(store), new AuditChainError('anchor-invalid'));
      t.match(await verify(), { ok: false, reason: 'anchor-invalid' });
      await restoreTrail(sql, 'columns');
    });

    await t.test('concurrent appends are serialised into one chain', async (t) => {
      const before = (await auditIds(sql)).length;
      await Promise.all(Array.from({ length: 16 }, () => append(store)));
      t.match(await verify(), { ok: true, entries: before + 16, head: { entries: before + 16 } });
    });

    await t.test('appendMany: one hold of the chain, each event its own entry and link, between single appends', async (t) => {
      const before = (await auditIds(sql)).length;
      await append(store);
      const keys = Array.from({ length: 7 }, (_, i) => `MANY_${i}`);
      await store.transaction((s) =>
        s.audit.appendMany(
          s.tx,
          keys.map((secretKey, i) => ({
            actorType: 'identity' as const,
            actorId: randomUUID(),
            eventType: 'create-secret',
            projectId: PROJECT,
            environment: 'prod',
            secretPath: '/',
            secretKey,
            secretVersion: 1,
            // Two shapes of metadata, each as jsonb gives it back.
            metadata: (i % 2 ? { batch: true } : { batch: true, note: 'ünïcode ✓' }) as Record<string, string | boolean>,
            ip: null,
          })),
        ),
      );
      await append(store);
      t.match(await verify(), { ok: true, entries: before + 9, head: { entries: before + 9 } });
      const rows = await sql<{ secretKey: string }[]>`select secret_key from audit_log order by id desc limit 9`;
      t.same(rows.map((r) => r.secretKey).slice(1, 8).reverse(), keys, 'each its own entry, in order');
      await store.transaction((s) => s.audit.appendMany(s.tx, []));
      t.match(await verify(), { ok: true, entries: before + 9 }, 'nothing to append: nothing written');
    });

    await t.test('appendMany writes every field as given, awkward text and nulls included, 2,500 entries in one statement', async (t) => {
      const before = await verify();
      const awkward = ['', 'NULL', 'null', '"quoted"', 'back\\slash\\', '{braces,and,commas}', 'new\nline\ttab', ' spaced ', 'ünïcode ✓ 𝄞', "it's", 'x'.repeat(3000)];
      const at = (n: number) => awkward[n % awkward.length]!;
      const events = Array.from({ length: 2500 }, (_, n) => ({
        actorType: (['user', 'identity', 'system'] as const)[n % 3]!,
        actorId: n % 4 === 0 ? null : at(n + 1),
        eventType: `event ${at(n + 2)}`,
        projectId: n % 5 === 0 ? null : PROJECT,
        environment: n % 6 === 0 ? null : at(n + 3),
        secretPath: n % 7 === 0 ? null : at(n + 4),
        secretKey: n % 8 === 0 ? null : at(n + 5),
        secretVersion: n % 9 === 0 ? null : n,
        metadata: (n % 10 === 0 ? {} : { text: at(n + 6), n, flag: n % 2 === 0, none: null }) as Record<string, string | number | boolean | null>,
        ip: n % 11 === 0 ? null : at(n + 8),
      }));
      await store.transaction((s) => s.audit.appendMany(s.tx, events));
      t.match(await verify(), { ok: true, entries: (before.ok ? before.entries : 0) + 2500 }, 'the chain verifies');
      const rows = await sql<Record<string, unknown>[]>`select actor_type, actor_id, event_type, project_id, environment, secret_path, secret_key,
          secret_version, metadata, ip from audit_log order by id desc limit 2500`;
      // Compared as text with sorted keys (jsonb orders them its own way); one assertion, so
      // a failure names the first entry that differs rather than diffing 2,500.
      const canonical = (x: unknown) => JSON.stringify(x, (_, v) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort()) : v));
      rows.reverse();
      const differs = rows.findIndex((r, n) => canonical(r) !== canonical(events[n]));
      t.same(differs === -1 ? [] : [rows[differs], events[differs]], [], 'each entry reads back as given, in order');
    });

    await t.test('appendMany in a transaction that fails writes no entry and leaves the anchor', async (t) => {
      const before = await verify();
      const failing = store.transaction(async (s) => {
        await s.audit.appendMany(
          s.tx,
          Array.from({ length: 5 }, () => ({ actorType: 'system' as const, actorId: null, eventType: 'create-secret', metadata: { batch: true } })),
        );
        throw new Error('the change failed after its entries');
      });
      await t.rejects(failing, /the change failed/);
      t.same(await verify(), before);
      await append(store);
      t.match(await verify(), { ok: true, entries: before.entries + 1 }, 'the next append extends the chain');
    });

    await t.test('a rollback to an older copy verifies alone, but not against a head recorded since', async (t) => {
      await restoreTrail(sql, 'pristine');
      const old = await verify();
      t.match(old, { ok: true, entries: 12 }, 'an older trail with its own anchor is a valid chain');
      await restoreTrail(sql, 'columns');
      const now = await verify();
      if (!old.ok || !now.ok) throw new Error('unreachable');
      const recorded = (h: typeof now.head) => ({ lastId: h.lastId, macPrefix: h.lastMac.toString('hex').slice(0, 16) });
      t.match(await store.audit.verify({ recordedHead: recorded(old.head) }), { ok: true }, 'a head recorded earlier is still in it');
      t.match(await store.audit.verify({ recordedHead: recorded(now.head) }), { ok: true });

      await restoreTrail(sql, 'pristine');
      t.same(
        await store.audit.verify({ recordedHead: recorded(now.head) }),
        { ok: false, entries: 12, brokenAt: null, reason: 'recorded-head-missing' },
        'rolled back past the recorded head',
      );
      await restoreTrail(sql, 'columns');
      t.same(
        await store.audit.verify({ recordedHead: { ...recorded(old.head), macPrefix: 'f'.repeat(16) } }),
        { ok: false, entries: (await auditIds(sql)).length, brokenAt: null, reason: 'recorded-head-missing' },
        'a recorded MAC that differs',
      );
    });

    await t.test('without the key nothing is written or verified', async (t) => {
      const keyless = createStore(sql);
      const before = await auditIds(sql);
      await t.rejects(keyless.transaction((s) => s.audit.append(s.tx, { actorType: 'system', actorId: null, eventType: 'x' })), new AuditChainError('no-key'));
      await t.rejects(keyless.audit.verify(), new AuditChainError('no-key'));
      t.same(await auditIds(sql), before);
    });
  });

  t.test(`entries written before the chain was keyed (${backend})`, async (t) => {
    const sql = await openSql(t, backend);
    // The schema and the rule of the version before: plain SHA-256, no chain column.
    await migrate(sql, (await loadMigrations()).slice(0, 2));
    for (let i = 0; i < 5; i++) {
      await sql`insert into audit_log (at, actor_type, actor_id, event_type, metadata, prev_hash, hash)
        values (${new Date(Date.now() + i)}, 'system', null, ${`legacy-${i}`}, ${sql.json({ i })}, ${Buffer.alloc(0)}, ${Buffer.alloc(0)})`;
    }
    await rechainWithSha256(sql, 0);
    await migrate(sql);
    t.same((await sql`select distinct chain from audit_log`).map((r) => r.chain), [1], 'the migration marks existing rows as legacy');
    const { store } = await anchored(sql);
    await appendMany(store, 4);
    const verify = () => store.audit.verify();
    t.match(await verify(), { ok: true, entries: 9, head: { entries: 9, legacyEntries: 5 } }, 'old and keyed entries verify as one chain');
    await saveTrail(sql, 'mixed');
    const ids = await auditIds(sql);

    await sql`update audit_log set event_type = 'x' where id = ${ids[2]!}`;
    t.same(await verify(), broken(ids[2]!, 9), 'an edited legacy entry');
    await rechainWithSha256(sql, ids[2]!);
    t.same(await verify(), broken(ids[5]!, 9), 'and re-hashed with SHA-256 from there on: the first keyed entry breaks');
    await restoreTrail(sql, 'mixed');

    await sql`update audit_log set event_type = 'x' where id = ${ids[2]!}`;
    await rechainWithSha256(sql, ids[2]!, { markLegacy: true });
    t.match(await verify(), { ok: false, brokenAt: null, reason: 'head-mismatch' }, 'every entry claimed as legacy: the anchor pins 5');
    await restoreTrail(sql, 'mixed');

    await rechainWithSha256(sql, ids[6]!, { markLegacy: true });
    t.same(await verify(), broken(ids[6]!, 9), 'the newest keyed entries claimed as legacy: no legacy entry after a keyed one');
    await restoreTrail(sql, 'mixed');

    // Only the legacy part re-hashed after an edit: the first keyed entry's link breaks.
    await sql`update audit_log set event_type = 'x' where id = ${ids[2]!}`;
    const legacyRows = ids.slice(0, 5);
    await rechainWithSha256(sql, ids[2]!);
    await restoreKeyed(sql, 'mixed', ids.slice(5));
    t.same(await verify(), broken(ids[5]!, 9), 'legacy entries re-hashed: the first keyed entry no longer links');
    await restoreTrail(sql, 'mixed');

    await sql`delete from audit_log where id = ${legacyRows[0]!}`;
    await rechainWithSha256(sql, legacyRows[1]!);
    await restoreKeyed(sql, 'mixed', ids.slice(5));
    t.match(await verify(), { ok: false, brokenAt: ids[5] }, 'the oldest legacy entry removed and the rest re-hashed');
    await restoreTrail(sql, 'mixed');
    t.match(await verify(), { ok: true, entries: 9 });
  });
}

/** Puts the saved keyed entries back unchanged (an attacker re-hashing only the legacy part). */
async function restoreKeyed(sql: Sql, name: string, ids: number[]) {
  await sql`delete from audit_log where id in ${sql(ids)}`;
  await sql.unsafe(`insert into audit_log select * from ${name}_log where id in (${ids.map(Number).join(',')})`);
}
