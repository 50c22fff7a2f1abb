// The audit trail: append-only and hash-chained. Each entry's hash covers the previous
// entry's hash, so an edited or deleted row breaks the chain (see verify()).
// Entries carry names, paths and versions, never a value.
import { createHash } from 'node:crypto';
import type { Queryable, Tx } from './db.js';

const AUDIT_CHAIN_LOCK_ID = 74_820_114;
const GENESIS = Buffer.alloc(32);

export interface AuditEvent {
  actorType: 'user' | 'identity' | 'system';
  actorId: string | null;
  eventType: string;
  projectId?: string | null;
  environment?: string | null;
  secretPath?: string | null;
  secretKey?: string | null;
  secretVersion?: number | null;
  metadata?: Record<string, string | number | boolean | null>;
  ip?: string | null;
}

export interface AuditRow extends Required<Omit<AuditEvent, 'metadata'>> {
  id: number;
  at: Date;
  metadata: Record<string, unknown>;
  prevHash: Buffer;
  hash: Buffer;
}

export interface AuditFilter {
  projectId?: string;
  environment?: string;
  secretPath?: string;
  eventType?: string;
  actorType?: AuditEvent['actorType'];
  actorId?: string;
  startDate?: Date;
  endDate?: Date;
  offset: number;
  limit: number;
}

/** An entry as listed, with the actor's name where it still exists. */
export interface AuditListRow extends Omit<AuditRow, 'prevHash' | 'hash'> {
  actorName: string | null;
  actorEmail: string | null;
}

function entryHash(prev: Buffer, at: Date, e: AuditEvent): Buffer {
  const canonical = JSON.stringify([
    at.toISOString(),
    e.actorType,
    e.actorId ?? null,
    e.eventType,
    e.projectId ?? null,
    e.environment ?? null,
    e.secretPath ?? null,
    e.secretKey ?? null,
    e.secretVersion ?? null,
    sortedEntries(e.metadata ?? {}),
    e.ip ?? null,
  ]);
  return createHash('sha256').update(prev).update(canonical).digest();
}

function sortedEntries(o: Record<string, unknown>): [string, unknown][] {
  return Object.keys(o)
    .sort()
    .map((k) => [k, o[k]]);
}

export function auditStore(sql: Queryable) {
  return {
    /** Must run inside the transaction of the change it records (fails closed). */
    async append(tx: Tx, e: AuditEvent): Promise<void> {
      await tx`select pg_advisory_xact_lock(${AUDIT_CHAIN_LOCK_ID})`;
      const [last] = await tx<{ hash: Buffer }[]>`select hash from audit_log order by id desc limit 1`;
      const prev = last?.hash ?? GENESIS;
      // Millisecond precision, so the stored time hashes the same when read back.
      const at = new Date(Math.floor(Date.now()));
      await tx`insert into audit_log (at, actor_type, actor_id, event_type, project_id, environment, secret_path,
          secret_key, secret_version, metadata, ip, prev_hash, hash)
        values (${at}, ${e.actorType}, ${e.actorId}, ${e.eventType}, ${e.projectId ?? null}, ${e.environment ?? null},
          ${e.secretPath ?? null}, ${e.secretKey ?? null}, ${e.secretVersion ?? null}, ${tx.json(e.metadata ?? {})},
          ${e.ip ?? null}, ${prev}, ${entryHash(prev, at, e)})`;
    },

    /** Newest first; every filter optional. */
    async list(f: AuditFilter): Promise<AuditListRow[]> {
      const conds = [sql`true`];
      if (f.projectId !== undefined) conds.push(sql`a.project_id = ${f.projectId}`);
      if (f.environment !== undefined) conds.push(sql`a.environment = ${f.environment}`);
      if (f.secretPath !== undefined) conds.push(sql`a.secret_path = ${f.secretPath}`);
      if (f.eventType !== undefined) conds.push(sql`a.event_type = ${f.eventType}`);
      if (f.actorType !== undefined) conds.push(sql`a.actor_type = ${f.actorType}`);
      if (f.actorId !== undefined) conds.push(sql`a.actor_id = ${f.actorId}`);
      if (f.startDate !== undefined) conds.push(sql`a.at >= ${f.startDate}`);
      if (f.endDate !== undefined) conds.push(sql`a.at <= ${f.endDate}`);
      const where = conds.reduce((acc, c) => sql`${acc} and ${c}`);
      return sql<AuditListRow[]>`select a.id, a.at, a.actor_type, a.actor_id, a.event_type, a.project_id, a.environment,
          a.secret_path, a.secret_key, a.secret_version, a.metadata, a.ip,
          coalesce(i.name, nullif(trim(u.first_name || ' ' || u.last_name), '')) as actor_name, u.email as actor_email
        from audit_log a
        left join identities i on a.actor_type = 'identity' and i.id::text = a.actor_id
        left join users u on a.actor_type = 'user' and u.id::text = a.actor_id
        where ${where}
        order by a.id desc
        limit ${f.limit} offset ${f.offset}`;
    },

    /** Walks the whole chain; returns the id of the first entry that does not verify. */
    async verify(): Promise<{ ok: true; entries: number } | { ok: false; brokenAt: number; entries: number }> {
      let prev: Buffer = GENESIS;
      let entries = 0;
      let brokenAt: number | undefined;
      await sql<AuditRow[]>`select * from audit_log order by id`.cursor(500, async (rows) => {
        for (const r of rows) {
          entries++;
          if (brokenAt !== undefined) continue;
          const expected = entryHash(prev, r.at, { ...r, metadata: r.metadata as AuditEvent['metadata'] });
          if (!r.prevHash.equals(prev) || !r.hash.equals(expected)) brokenAt = r.id;
          prev = r.hash;
        }
      });
      return brokenAt === undefined ? { ok: true, entries } : { ok: false, brokenAt, entries };
    },
  };
}
export type AuditStore = ReturnType<typeof auditStore>;
