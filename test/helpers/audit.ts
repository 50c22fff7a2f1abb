// What someone with write access to the database (and no key) can do to the audit
// trail: recompute hashes with the published plain SHA-256 rule, and save and restore
// the trail with its anchor (a rollback).
import { createHash } from 'node:crypto';
import type { Queryable } from '../../storage/db.js';

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
