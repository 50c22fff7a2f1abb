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
