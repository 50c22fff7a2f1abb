// The audit trail: append-only, chained and anchored. Entries carry names, paths and
// versions, never a value.
//
// Each entry's hash is an HMAC over its id, its content (as the database stores it)
// and its predecessor's hash, made in the crypto workers with the instance's audit key
// (an AuditKey handed in by the server: storage holds no key material). The chain's
// head (entry count, last id, last MAC) lives in audit_chain_head, MACed as well and
// rewritten in the transaction of every append. So an edited, inserted or deleted
// entry, the newest ones included, breaks a link, a MAC or the anchor, and repairing
// any of them needs the key. What it cannot show: a rollback of the whole table and
// its anchor to an older copy (see verify's recordedHead and SECURITY.md).
//
// Entries written before the chain was keyed (chain = 1) keep their plain SHA-256
// hashes; the anchor pins how many there are, and the keyed chain continues from the
// last of them, so they cannot be changed afterwards either.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Queryable, Sql, Tx } from './db.js';

const AUDIT_CHAIN_LOCK_ID = 74_820_114;
const GENESIS = Buffer.alloc(32);
const LEGACY = 1;
const KEYED = 2;
const ENTRY_LABEL = 'vault-standalone/audit-entry/v2';
const HEAD_LABEL = 'vault-standalone/audit-head/v1';
const VERIFY_BATCH = 500;

export interface AuditKey {
  /** The crypto_keys row (purpose 'audit') the MACs are made with. */
  readonly keyId: string;
  /** HMAC-SHA-256 of the message under the audit key, computed in the crypto workers. */
  mac(message: string): Promise<Buffer>;
}

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
  chain: number;
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
export interface AuditListRow extends Omit<AuditRow, 'prevHash' | 'hash' | 'chain'> {
  actorName: string | null;
  actorEmail: string | null;
}

/** The head of the chain as the anchor records it. */
export interface AuditHead {
  keyId: string;
  entries: number;
  /** Entries from before the chain was keyed, verified by the old plain SHA-256 rule. */
  legacyEntries: number;
  /** 0 while the trail is empty. */
  lastId: number;
  lastMac: Buffer;
}

interface AnchorRow extends AuditHead {
  mac: Buffer;
}

/**
 * Why a chain does not verify: `entry` an entry's hash or link (brokenAt names it);
 * `anchor-missing` / `anchor-invalid` the head anchor is gone or was edited;
 * `head-mismatch` every entry verifies but the chain does not end where the anchor
 * says (the newest entries were removed); `recorded-head-missing` the head recorded
 * out of band is not in the chain (rolled back to an older copy).
 */
export type AuditBreak = 'entry' | 'anchor-missing' | 'anchor-invalid' | 'head-mismatch' | 'recorded-head-missing';

export type AuditVerification =
  | { ok: true; entries: number; head: AuditHead }
  | {
      ok: false;
      entries: number;
      brokenAt: number | null;
      reason: AuditBreak;
      /** For head-mismatch: where the (valid) anchor says the chain ends, and where it does. */
      anchored?: { entries: number; lastId: number };
      found?: { entries: number; lastId: number };
    };

/** An append that cannot extend the chain: the change it records must not happen. */
export class AuditChainError extends Error {
  override readonly name = 'AuditChainError';
  constructor(readonly reason: 'no-key' | 'anchor-missing' | 'anchor-invalid' | 'keyed-entries-exist') {
    super(
      {
        'no-key': 'the audit trail has no key: this store cannot write or verify it',
        'anchor-missing': 'the audit chain has no head anchor (it was removed): nothing can be audited, so nothing is changed',
        'anchor-invalid': 'the audit chain head anchor does not verify (it was edited): nothing can be audited, so nothing is changed',
        'keyed-entries-exist': 'the audit trail holds keyed entries but no anchor: refusing to anchor it anew',
      }[reason],
    );
  }
}

// What a MAC covers, read back from the database in canonical text forms, so the MAC
// is over exactly what is stored: microseconds of the time, jsonb's own text of the
// metadata, the uuid's text.
interface ChainRow {
  id: number;
  prevHash: Buffer;
  hash: Buffer;
  chain: number;
  atUs: number;
  actorType: AuditEvent['actorType'];
  actorId: string | null;
  eventType: string;
  projectId: string | null;
  environment: string | null;
  secretPath: string | null;
  secretKey: string | null;
  secretVersion: number | null;
  metadataText: string;
  ip: string | null;
  // The same columns as the legacy rule read them.
  at: Date;
  metadata: Record<string, unknown>;
}

function chainColumns(sql: Queryable) {
  return sql`id, prev_hash, hash, chain, (extract(epoch from at) * 1000000)::bigint as at_us, actor_type, actor_id,
    event_type, project_id::text as project_id, environment, secret_path, secret_key, secret_version,
    metadata::text as metadata_text, ip, at, metadata`;
}

function entryMessage(r: ChainRow): string {
  return JSON.stringify([
    ENTRY_LABEL,
    r.id,
    r.prevHash.toString('hex'),
    r.atUs,
    r.actorType,
    r.actorId,
    r.eventType,
    r.projectId,
    r.environment,
    r.secretPath,
    r.secretKey,
    r.secretVersion,
    r.metadataText,
    r.ip,
  ]);
}

function headMessage(h: AuditHead): string {
  return JSON.stringify([HEAD_LABEL, h.keyId, h.entries, h.legacyEntries, h.lastId, h.lastMac.toString('hex')]);
}

/** The rule of entries written before the chain was keyed (chain = 1); unchanged. */
function legacyEntryHash(prev: Buffer, r: ChainRow): Buffer {
  const canonical = JSON.stringify([
    r.at.toISOString(),
    r.actorType,
    r.actorId ?? null,
    r.eventType,
    r.projectId ?? null,
    r.environment ?? null,
    r.secretPath ?? null,
    r.secretKey ?? null,
    r.secretVersion ?? null,
    Object.keys(r.metadata)
      .sort()
      .map((k) => [k, r.metadata[k]]),
    r.ip ?? null,
  ]);
  return createHash('sha256').update(prev).update(canonical).digest();
}

const sameBytes = (a: Buffer, b: Buffer) => a.length === b.length && timingSafeEqual(a, b);

// The anchor this process last wrote or verified, per key: an append that finds it
// unchanged saves one MAC. Sound because only a (content, MAC) pair this process
// computed itself is remembered.
const knownAnchors = new WeakMap<AuditKey, string>();
const anchorFingerprint = (a: AnchorRow) => `${headMessage(a)}|${a.mac.toString('hex')}`;

async function anchorHolds(key: AuditKey, a: AnchorRow): Promise<boolean> {
  if (a.keyId !== key.keyId) return false;
  const fingerprint = anchorFingerprint(a);
  if (knownAnchors.get(key) === fingerprint) return true;
  if (!sameBytes(a.mac, await key.mac(headMessage(a)))) return false;
  knownAnchors.set(key, fingerprint);
  return true;
}

async function readAnchor(sql: Queryable): Promise<AnchorRow | undefined> {
  const [row] = await sql<AnchorRow[]>`select key_id, entries, legacy_entries, last_id, last_mac, mac
    from audit_chain_head where id = 1`;
  return row;
}

export function auditStore(sql: Queryable, key?: AuditKey) {
  const requireKey = (): AuditKey => {
    if (!key) throw new AuditChainError('no-key');
    return key;
  };

  return {
    /** Serialises appends and the anchor's creation for the rest of the transaction. */
    async lockChain(tx: Tx): Promise<void> {
      await tx`select pg_advisory_xact_lock(${AUDIT_CHAIN_LOCK_ID})`;
    },

    /** The head anchor as stored (not verified). */
    anchor: () => readAnchor(sql),

    /** True when the stored anchor carries a valid MAC under `k`. */
    async anchorHolds(k: AuditKey): Promise<boolean> {
      const a = await readAnchor(sql);
      return a !== undefined && anchorHolds(k, a);
    },

    /**
     * Anchors the chain for the first time, under `k`, at its current end: every entry
     * so far is a legacy one. Call with lockChain held. Refuses when keyed entries exist
     * (their anchor was removed: anchoring anew would hide that).
     */
    async createAnchor(tx: Tx, k: AuditKey): Promise<void> {
      const [counts] = await tx<{ all: number; keyed: number }[]>`select count(*)::int as all,
        (count(*) filter (where chain <> ${LEGACY}))::int as keyed from audit_log`;
      if (counts!.keyed > 0) throw new AuditChainError('keyed-entries-exist');
      const [last] = await tx<{ id: number; hash: Buffer }[]>`select id, hash from audit_log order by id desc limit 1`;
      const head: AuditHead = {
        keyId: k.keyId,
        entries: counts!.all,
        legacyEntries: counts!.all,
        lastId: last?.id ?? 0,
        lastMac: last?.hash ?? GENESIS,
      };
      const mac = await k.mac(headMessage(head));
      await tx`insert into audit_chain_head (id, key_id, entries, legacy_entries, last_id, last_mac, mac)
        values (1, ${head.keyId}, ${head.entries}, ${head.legacyEntries}, ${head.lastId}, ${head.lastMac}, ${mac})`;
      knownAnchors.set(k, anchorFingerprint({ ...head, mac }));
    },

    /** Must run inside the transaction of the change it records (fails closed). */
    async append(tx: Tx, e: AuditEvent): Promise<void> {
      const k = requireKey();
      await tx`select pg_advisory_xact_lock(${AUDIT_CHAIN_LOCK_ID})`;
      const anchor = await readAnchor(tx);
      if (!anchor) throw new AuditChainError('anchor-missing');
      // Millisecond precision, as every entry so far.
      const at = new Date(Date.now());
      const [row] = await tx<ChainRow[]>`insert into audit_log (at, actor_type, actor_id, event_type, project_id,
          environment, secret_path, secret_key, secret_version, metadata, ip, prev_hash, hash, chain)
        values (${at}, ${e.actorType}, ${e.actorId}, ${e.eventType}, ${e.projectId ?? null}, ${e.environment ?? null},
          ${e.secretPath ?? null}, ${e.secretKey ?? null}, ${e.secretVersion ?? null}, ${tx.json(e.metadata ?? {})},
          ${e.ip ?? null}, ${anchor.lastMac}, ${Buffer.alloc(0)}, ${KEYED})
        returning ${chainColumns(tx)}`;
      // Extending an edited anchor would make the edit valid: check it first.
      const [holds, mac] = await Promise.all([anchorHolds(k, anchor), k.mac(entryMessage(row!))]);
      if (!holds) throw new AuditChainError('anchor-invalid');
      await tx`update audit_log set hash = ${mac} where id = ${row!.id}`;
      const head: AuditHead = { ...anchor, keyId: k.keyId, entries: anchor.entries + 1, lastId: row!.id, lastMac: mac };
      const headMac = await k.mac(headMessage(head));
      await tx`update audit_chain_head set entries = ${head.entries}, last_id = ${head.lastId}, last_mac = ${head.lastMac},
        mac = ${headMac} where id = 1`;
      knownAnchors.set(k, anchorFingerprint({ ...head, mac: headMac }));
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

    /**
     * Recomputes every hash from the first entry, checks every link, then the anchor:
     * its MAC, and that the chain ends where it says. One snapshot, so appends running
     * meanwhile do not count. `recordedHead` (an entry id and a prefix of its MAC, as
     * printed by an earlier verify and kept elsewhere) must be in the chain.
     */
    async verify(opts: { recordedHead?: { lastId: number; macPrefix: string } } = {}): Promise<AuditVerification> {
      const k = requireKey();
      const walk = (q: Queryable) => verifyChain(q, k, opts.recordedHead);
      // A store bound to a transaction already reads one snapshot; the pool opens one.
      const pool = sql as Sql;
      return typeof pool.begin === 'function'
        ? (pool.begin('isolation level repeatable read read only', walk) as Promise<AuditVerification>)
        : walk(sql);
    },
  };
}
export type AuditStore = ReturnType<typeof auditStore>;

async function verifyChain(
  sql: Queryable,
  key: AuditKey,
  recorded: { lastId: number; macPrefix: string } | undefined,
): Promise<AuditVerification> {
  const anchor = await readAnchor(sql);
  let prev: Buffer = GENESIS;
  let entries = 0;
  let legacy = 0;
  let lastId = 0;
  let keyedSeen = false;
  let recordedFound = false;
  let brokenAt: number | undefined;
  // Pulled batch by batch: postgres.js does not await a cursor callback's last, partial batch.
  for await (const rows of sql<ChainRow[]>`select ${chainColumns(sql)} from audit_log order by id`.cursor(VERIFY_BATCH)) {
    // Each MAC depends on stored values only: a batch goes to the workers at once.
    const macs =
      brokenAt === undefined ? await Promise.all(rows.map((r) => (r.chain === KEYED ? key.mac(entryMessage(r)) : null))) : [];
    rows.forEach((r, i) => {
      entries++;
      if (brokenAt !== undefined) return;
      let holds: boolean;
      if (r.chain === LEGACY) {
        // Legacy entries all come before the first keyed one.
        holds = !keyedSeen && r.hash.equals(legacyEntryHash(prev, r));
        legacy++;
      } else if (r.chain === KEYED) {
        keyedSeen = true;
        holds = sameBytes(r.hash, macs[i]!);
      } else {
        holds = false;
      }
      if (!holds || !r.prevHash.equals(prev)) {
        brokenAt = r.id;
        return;
      }
      if (recorded && r.id === recorded.lastId) recordedFound = r.hash.toString('hex').startsWith(recorded.macPrefix);
      prev = r.hash;
      lastId = r.id;
    });
  }
  const broken = (at: number | null, reason: AuditBreak) => ({ ok: false as const, entries, brokenAt: at, reason });
  if (brokenAt !== undefined) return broken(brokenAt, 'entry');
  if (!anchor) return broken(null, 'anchor-missing');
  if (!(await anchorHolds(key, anchor))) return broken(null, 'anchor-invalid');
  if (anchor.entries !== entries || anchor.legacyEntries !== legacy || anchor.lastId !== lastId || !anchor.lastMac.equals(prev)) {
    return { ...broken(null, 'head-mismatch'), anchored: { entries: anchor.entries, lastId: anchor.lastId }, found: { entries, lastId } };
  }
  if (recorded && !recordedFound) return broken(null, 'recorded-head-missing');
  return {
    ok: true,
    entries,
    head: { keyId: anchor.keyId, entries, legacyEntries: legacy, lastId, lastMac: prev },
  };
}
