// What someone with write access to the database (and no key) can do to the audit
// trail: recompute hashes with the published plain SHA-256 rule, and save and restore
// the trail with its anchor (a rollback).
import { createHash, createHmac, randomBytes, randomUUID } from 'node:crypto';
import type { AuditKey } from '../../storage/audit.js';
import type { Queryable, Sql } from '../../storage/db.js';
import { createStore, type Store } from '../../storage/index.js';

const GENESIS = Buffer.alloc(32);

interface StoredEntry {
  id: number;
  at: Date;
  actorType: string;
  actorId: string | null;
  eventType: string;
  projectId: string | null;
  environment: string | null;
  secretPath: string | null;
  secretKey: string | null;
  secretVersion: number | null;
  metadata: Record<string, unknown>;
  ip: string | null;
  hash: Buffer;
}

/** The rule of migration 0001: sha256(prev_hash || canonical entry), no key. */
export function sha256Entry(prev: Buffer, r: StoredEntry): Buffer {
  const canonical = JSON.stringify([
    r.at.toISOString(),
    r.actorType,
    r.actorId,
    r.eventType,
    r.projectId,
    r.environment,
    r.secretPath,
    r.secretKey,
    r.secretVersion,
    Object.keys(r.metadata)
      .sort()
      .map((k) => [k, r.metadata[k]]),
    r.ip,
  ]);
  return createHash('sha256').update(prev).update(canonical).digest();
}

/**
 * Rewrites prev_hash and hash of every entry from id `fromId` on with plain SHA-256,
 * so every link holds again; `markLegacy` also claims they predate the keyed chain.
 */
export async function rechainWithSha256(sql: Queryable, fromId: number, opts: { markLegacy?: boolean } = {}): Promise<void> {
  const rows = await sql<StoredEntry[]>`select id, at, actor_type, actor_id, event_type, project_id, environment, secret_path,
    secret_key, secret_version, metadata, ip, hash from audit_log order by id`;
  let prev: Buffer = GENESIS;
  for (const r of rows) {
    if (r.id < fromId) {
      prev = r.hash;
      continue;
    }
    const hash = sha256Entry(prev, r);
    await sql`update audit_log set prev_hash = ${prev}, hash = ${hash} where id = ${r.id}`;
    if (opts.markLegacy) await sql`update audit_log set chain = 1 where id = ${r.id}`;
    prev = hash;
  }
}

/** A copy of the trail and its anchor, kept in the same database. */
export async function saveTrail(sql: Queryable, name: string): Promise<void> {
  await sql.unsafe(`create table ${name}_log as select * from audit_log; create table ${name}_head as select * from audit_chain_head`);
}

/** Puts a saved copy back, as a restore from an older dump would. */
export async function restoreTrail(sql: Queryable, name: string): Promise<void> {
  await sql.unsafe(`delete from audit_log; insert into audit_log select * from ${name}_log;
    delete from audit_chain_head; insert into audit_chain_head select * from ${name}_head`);
}

export async function auditIds(sql: Queryable): Promise<number[]> {
  return (await sql<{ id: number }[]>`select id from audit_log order by id`).map((r) => r.id);
}

/**
 * Appends `count` keyed entries straight into audit_log, each MACed with `mac` (the test's
 * stand-in for the audit key) by the chain's own message rule, in statements of `batch`
 * rows, then moves the anchor to the new end with a valid MAC: a long, correct trail in
 * seconds instead of `count` appends. The anchor must exist (and be keyed with keyId).
 */
export async function bulkAppend(
  sql: Queryable,
  key: { keyId: string; mac: (message: string) => Buffer },
  count: number,
  batch = 20_000,
): Promise<{ lastId: number; entries: number }> {
  const { chainMessages } = await import('../../storage/audit.js');
  const [a] = await sql<{ entries: number; legacyEntries: number; lastId: number; lastMac: Buffer; trailMissing: boolean }[]>`
    select entries, legacy_entries, last_id, last_mac, trail_missing from audit_chain_head where id = 1`;
  if (!a) throw new Error('bulkAppend: no anchor');
  const at = new Date('2024-01-01T00:00:00.000Z');
  let prev: Buffer = a.lastMac;
  let id = Number(a.lastId);
  let last: Parameters<typeof chainMessages.entry>[0] | undefined;
  for (let done = 0; done < count; ) {
    const n = Math.min(batch, count - done);
    const ids: string[] = [];
    const prevs: string[] = [];
    const hashes: string[] = [];
    for (let i = 0; i < n; i++) {
      id++;
      const row = {
        id,
        prevHash: prev,
        hash: Buffer.alloc(0) as Buffer,
        chain: 2,
        atUs: at.getTime() * 1000,
        actorType: 'system' as const,
        actorId: null,
        eventType: 'bulk-test',
        projectId: null,
        environment: null,
        secretPath: null,
        secretKey: `K${id}`,
        secretVersion: null,
        metadataText: '{}',
        ip: null,
        keyId: key.keyId,
        at,
        metadata: {},
      };
      const mac = key.mac(chainMessages.entry(row));
      row.hash = mac;
      ids.push(String(id));
      prevs.push(prev.toString('hex'));
      hashes.push(mac.toString('hex'));
      prev = mac;
      last = row;
    }
    await sql`insert into audit_log (id, at, actor_type, event_type, secret_key, metadata, prev_hash, hash, chain, key_id)
      select e.id, ${at}::timestamptz, 'system', 'bulk-test', 'K' || e.id, '{}'::jsonb, decode(e.p, 'hex'), decode(e.h, 'hex'), 2, ${key.keyId}::uuid
      from unnest(${ids}::bigint[], ${prevs}::text[], ${hashes}::text[]) as e(id, p, h)`;
    done += n;
  }
  const head = {
    keyId: key.keyId,
    entries: Number(a.entries) + count,
    legacyEntries: Number(a.legacyEntries),
    lastId: id,
    trailMissing: a.trailMissing,
  };
  const headMac = key.mac(chainMessages.head(head, last));
  await sql`update audit_chain_head set entries = ${head.entries}, last_id = ${id}, last_mac = ${prev}, mac = ${headMac} where id = 1`;
  return { lastId: id, entries: head.entries };
}

/** An audit key held by the test (an HMAC it can compute), counting the MACs it computed. */
export interface TestAuditKey extends AuditKey {
  mac: (m: string) => Buffer;
  /** MACs computed (entries, anchors, checkpoints). */
  computed: number;
}

/** A store over `sql` (migrated) with a test audit key and the chain's first anchor. */
export async function anchoredStore(sql: Sql): Promise<{ store: Store; key: TestAuditKey }> {
  const keyId = randomUUID();
  await sql`insert into crypto_keys (id, purpose, root_key_version, wrapped) values (${keyId}, 'audit', 1, ${randomBytes(60)})`;
  const secret = randomBytes(32);
  const mac = (m: string) => createHmac('sha256', secret).update(m).digest();
  const key: TestAuditKey = {
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
