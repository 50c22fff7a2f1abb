// The audit trail: append-only, chained and anchored. Entries carry names, paths and
// versions, never a value.
//
// Each entry's hash is an HMAC over its id, its content (as the database stores it)
// and its predecessor's hash, made in the crypto workers with the instance's audit key
// (an AuditKey handed in by the server: storage holds no key material). The chain's
// head (entry count, last id, last MAC) lives in audit_chain_head, MACed as well and
// rewritten in the transaction of every append. The head's MAC covers the newest
// entry's message rather than its MAC, so an append computes both in one worker task;
// appends are serialised by the anchor row's lock, which is held through the commit,
// so that critical section is kept to three statements and that one task. So an edited, inserted or deleted
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
const ENTRY_LABEL = 'vault-standalone/audit-entry/v3';
const HEAD_LABEL = 'vault-standalone/audit-head/v2';
const VERIFY_BATCH = 500;

export interface AuditKey {
  /** The crypto_keys row (purpose 'audit') the MACs are made with. */
  readonly keyId: string;
  /** HMAC-SHA-256 of each message under the audit key, computed in the crypto workers in one task. */
  macs(messages: string[]): Promise<Buffer[]>;
  /** The same MACs over a chain of messages, in one task (see MacChain); without it, macs() one link at a time. */
  macChain?(chain: MacChain): Promise<MacChainResult>;
  /**
   * The key version `keyId` names, when the anchor names another key than this one (a
   * rekey replaced the audit key while this process runs); undefined when there is no
   * such audit key. The anchor is then proven under it before anything is appended.
   */
  resolve?(keyId: string): Promise<AuditKey | undefined>;
  /**
   * The entries the instance recorded, under a key the database does not hold, as written
   * before the chain was keyed (server/domain/keyring.ts InstanceRecord). When given, a
   * legacy entry it does not name breaks the chain ('legacy-unrecorded'): rewriting the
   * trail as a pre-keyed chain (plain SHA-256, no key needed) does not verify.
   */
  readonly legacy?: LegacyRecord;
}

/** The legacy (pre-keyed) part of the trail as recorded once: how many, the last id and its hash (hex). */
export interface LegacyRecord {
  entries: number;
  lastId: number;
  head: string;
}

/** The entry a rekey of the audit key writes: see rekeyKey. */
export const AUDIT_KEY_CHECKPOINT = 'audit-key-rekeyed';

/**
 * Messages whose text holds the hex of the MAC before them: link n is
 * `before + hex(prev) + after`, where prev is `start` for the first link and link n-1's
 * MAC after it; `final` holds the hex of the last link's prev (the head's message embeds
 * the newest entry's message); `extra` are plain messages.
 */
export interface MacChain {
  start: Buffer;
  links: Array<[before: string, after: string]>;
  final: [before: string, after: string];
  extra: string[];
}
export interface MacChainResult {
  links: Buffer[];
  final: Buffer;
  extra: Buffer[];
}

async function macChain(k: AuditKey, c: MacChain): Promise<MacChainResult> {
  if (k.macChain) return k.macChain(c);
  const links: Buffer[] = [];
  let prev = c.start;
  let lastPrev = c.start;
  for (const [before, after] of c.links) {
    lastPrev = prev;
    prev = (await k.macs([before + prev.toString('hex') + after]))[0]!;
    links.push(prev);
  }
  const [final, ...extra] = await k.macs([c.final[0] + lastPrev.toString('hex') + c.final[1], ...c.extra]);
  return { links, final: final!, extra };
}

// Stands for an entry's prevHash while its message is built, so the message can be cut
// where the predecessor's MAC goes. The first occurrence is always that place: an entry's
// message starts [label, id, prev, …], the head's [label, key id, counts, last id, entry message].
const PREV_PLACEHOLDER = Buffer.alloc(32, 0xab);
const PREV_HEX = PREV_PLACEHOLDER.toString('hex');
function splitAtPrev(message: string): [string, string] {
  const at = message.indexOf(PREV_HEX);
  if (at < 0) throw new Error('audit: message without its link');
  return [message.slice(0, at), message.slice(at + PREV_HEX.length)];
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
  /**
   * The chain was started over an instance that already held data but no trail: the
   * trail before it was deleted. Set once, at the anchor's creation, under its MAC.
   */
  trailMissing: boolean;
}

export interface AnchorRow extends AuditHead {
  mac: Buffer;
}

/**
 * Why a chain does not verify: `entry` an entry's hash or link (brokenAt names it);
 * `anchor-missing` the head anchor is gone; `head-mismatch` every entry verifies but the
 * chain does not end where the anchor says (the newest entries were removed, entries
 * were re-hashed, or the anchor's count, last id or last MAC was edited);
 * `anchor-invalid` the chain ends where the anchor says but the anchor's MAC does not
 * hold (its MAC or key was edited); `recorded-head-missing` the head recorded out of
 * band is not in the chain (rolled back to an older copy); `trail-missing` the chain
 * verifies, but it was started over an instance that already held data with no trail
 * left (the whole trail, its key and its anchor had been deleted); `legacy-unrecorded`
 * entries claim to predate the keyed chain that the instance never recorded as such
 * (brokenAt names the first; null when recorded ones are missing): the trail was
 * rewritten as a pre-keyed chain; `checkpoint-invalid` a keyed checkpoint (table
 * audit_checkpoints, brokenAt its last id) does not verify: it was forged or edited;
 * `checkpoint-ahead` a valid checkpoint vouches for entries beyond the anchor: the newest
 * entries and the anchor were rolled back; `checkpoint-missing` a keyed checkpoint was
 * deleted (brokenAt: the checkpoint whose predecessor is gone, or the newest one known).
 */
export type AuditBreak =
  | 'entry'
  | 'anchor-missing'
  | 'anchor-invalid'
  | 'head-mismatch'
  | 'recorded-head-missing'
  | 'trail-missing'
  | 'legacy-unrecorded'
  | 'checkpoint-invalid'
  | 'checkpoint-ahead'
  | 'checkpoint-missing';

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

// What an entry's MAC covers: every column, in the forms the database gives them back
// (microseconds of the time, the uuid's lower-case text, jsonb's own text of the
// metadata), which an append knows before it writes the row.
export interface ChainRow {
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
  /** The audit key version that MACed a keyed entry (null for legacy entries). Not under the MAC: see verifyChain. */
  keyId: string | null;
  // The same columns as the legacy rule reads them.
  at: Date;
  metadata: Record<string, unknown>;
}

export function chainColumns(sql: Queryable) {
  return sql`id, prev_hash, hash, chain, (extract(epoch from at) * 1000000)::bigint as at_us, actor_type, actor_id,
    event_type, project_id::text as project_id, environment, secret_path, secret_key, secret_version,
    metadata::text as metadata_text, ip, key_id, at, metadata`;
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

/**
 * What the head's MAC covers. `last` is the newest entry: for a keyed one its message
 * (which binds its MAC, its place and its predecessor), for a legacy one its SHA-256
 * hash; undefined while the trail is empty.
 */
function headMessage(h: Omit<AuditHead, 'lastMac'>, last: ChainRow | undefined): string {
  const link = last === undefined ? 'genesis' : last.chain === KEYED ? entryMessage(last) : `legacy:${last.hash.toString('hex')}`;
  // The marker only when set: anchors written before it existed keep their MAC.
  return JSON.stringify([HEAD_LABEL, h.keyId, h.entries, h.legacyEntries, h.lastId, link, ...(h.trailMissing ? ['trail-missing'] : [])]);
}

/** A row as the chain reads it, and the messages an entry's and the head's MACs cover: for tools and tests that build a chain. */
export type AuditChainRow = ChainRow;
export const chainMessages = { entry: entryMessage, head: headMessage };

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

export const sameBytes = (a: Buffer, b: Buffer) => a.length === b.length && timingSafeEqual(a, b);

/**
 * A keyless running digest of the whole chain (every entry's content, link and hash), from
 * genesis. A rekey of the audit key records it in its checkpoint entry, MACed under the
 * new key: entries MACed by a destroyed older key are then verified against it.
 */
const chainDigest = (prev: Buffer, r: ChainRow): Buffer =>
  createHash('sha256').update(prev).update(entryMessage(r)).update(r.hash).digest();

// The anchor this process last wrote or verified, per key: an append that finds it
// unchanged saves one MAC. Sound because only a (content, MAC) pair this process
// computed itself is remembered.
const knownAnchors = new WeakMap<AuditKey, string>();
const anchorFingerprint = (a: AnchorRow) =>
  [a.keyId, a.entries, a.legacyEntries, a.lastId, a.lastMac.toString('hex'), a.mac.toString('hex'), a.trailMissing].join('|');

/**
 * The messages that prove an anchor, given the newest entry it names: its own MAC and,
 * for a keyed entry, the entry's MAC (which the anchor's lastMac must equal). `check`
 * takes their MACs, in that order, and says whether the anchor holds.
 */
function anchorProof(key: AuditKey, a: AnchorRow, last: ChainRow | undefined) {
  const messages = [headMessage(a, last)];
  if (last?.chain === KEYED) messages.push(entryMessage(last));
  const check = (macs: Buffer[]): boolean => {
    if (a.keyId !== key.keyId || !sameBytes(a.mac, macs[0]!)) return false;
    if (last === undefined) return a.lastId === 0 && a.lastMac.equals(GENESIS);
    if (last.id !== a.lastId || !last.hash.equals(a.lastMac)) return false;
    return last.chain !== KEYED || sameBytes(last.hash, macs[1]!);
  };
  return { messages, check };
}

/** The newest entry an anchor names, read for its proof (undefined for an empty trail or a missing row). */
async function anchoredEntry(sql: Queryable, a: AnchorRow): Promise<ChainRow | undefined> {
  if (a.lastId === 0) return undefined;
  const [row] = await sql<ChainRow[]>`select ${chainColumns(sql)} from audit_log where id = ${a.lastId}`;
  return row;
}

async function anchorHolds(key: AuditKey, a: AnchorRow, sql: Queryable): Promise<boolean> {
  if (a.keyId !== key.keyId) return false;
  const fingerprint = anchorFingerprint(a);
  if (knownAnchors.get(key) === fingerprint) return true;
  const last = await anchoredEntry(sql, a);
  if (a.lastId !== 0 && last === undefined) return false;
  const proof = anchorProof(key, a, last);
  if (!proof.check(await key.macs(proof.messages))) return false;
  knownAnchors.set(key, fingerprint);
  return true;
}

export const ANCHOR_COLUMNS = 'key_id, entries, legacy_entries, last_id, last_mac, mac, trail_missing';

export async function readAnchor(sql: Queryable): Promise<AnchorRow | undefined> {
  const [row] = await sql<AnchorRow[]>`select ${sql.unsafe(ANCHOR_COLUMNS)} from audit_chain_head where id = 1`;
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
      return a !== undefined && anchorHolds(k, a, sql);
    },

    /**
     * Whether the instance holds what a trail should have recorded (projects, machine
     * identities or people) that no entry left in the table can account for: none at all,
     * or only entries from before the chain was keyed, older than the newest such row.
     * Asked before anchoring anew: a true answer means the trail was deleted.
     */
    async trailMissing(tx: Tx): Promise<boolean> {
      const [r] = await tx<{ missing: boolean }[]>`with newest as (
          select greatest((select max(created_at) from projects), (select max(created_at) from identities),
            (select max(created_at) from users)) as at),
        trail as (select count(*) filter (where chain <> ${LEGACY}) as keyed, max(at) as last from audit_log)
        select (select at from newest) is not null and (select keyed from trail) = 0
          and ((select last from trail) is null or (select last from trail) < (select at from newest)) as missing`;
      return r!.missing;
    },

    /**
     * The legacy part of the trail as it stands, for the instance record made at the upgrade
     * (server/domain/integrity.ts): with an anchor, the entries it pins as legacy; without
     * one (a trail written before the chain was keyed), every entry.
     */
    async legacyPart(tx: Tx): Promise<LegacyRecord> {
      const a = await readAnchor(tx);
      const [n] = a
        ? [{ n: Number(a.legacyEntries) }]
        : await tx<{ n: number }[]>`select count(*)::int as n from audit_log`;
      if (n!.n === 0) return { entries: 0, lastId: 0, head: GENESIS.toString('hex') };
      const [last] = await tx<{ id: number; hash: Buffer }[]>`select id, hash from audit_log order by id offset ${n!.n - 1} limit 1`;
      return { entries: n!.n, lastId: Number(last?.id ?? 0), head: (last?.hash ?? GENESIS).toString('hex') };
    },

    /**
     * Whether the trail is exactly the legacy part `rec` recorded (every entry pre-keyed,
     * as many, ending at the same id and hash): only then may a new anchor be made over a
     * non-empty trail without reporting it (the one start that upgrades a pre-keyed trail).
     */
    async isRecordedLegacy(tx: Tx, rec: LegacyRecord): Promise<boolean> {
      const [c] = await tx<{ all: number; legacy: number }[]>`select count(*)::int as all,
        (count(*) filter (where chain = ${LEGACY}))::int as legacy from audit_log`;
      if (c!.all !== rec.entries || c!.legacy !== c!.all) return false;
      if (rec.entries === 0) return true;
      const [last] = await tx<{ id: number; hash: Buffer }[]>`select id, hash from audit_log order by id desc limit 1`;
      return Number(last!.id) === rec.lastId && last!.hash.toString('hex') === rec.head;
    },

    /**
     * Anchors the chain for the first time, under `k`, at its current end: every entry
     * so far is a legacy one. Call with lockChain held. Refuses when keyed entries exist
     * (their anchor was removed: anchoring anew would hide that). `trailMissing` (see
     * above) is sealed into the anchor for good.
     */
    async createAnchor(tx: Tx, k: AuditKey, opts: { trailMissing?: boolean } = {}): Promise<void> {
      const [counts] = await tx<{ all: number; keyed: number }[]>`select count(*)::int as all,
        (count(*) filter (where chain <> ${LEGACY}))::int as keyed from audit_log`;
      if (counts!.keyed > 0) throw new AuditChainError('keyed-entries-exist');
      const [last] = await tx<ChainRow[]>`select ${chainColumns(tx)} from audit_log order by id desc limit 1`;
      const head: AuditHead = {
        keyId: k.keyId,
        entries: counts!.all,
        legacyEntries: counts!.all,
        lastId: last?.id ?? 0,
        lastMac: last?.hash ?? GENESIS,
        trailMissing: opts.trailMissing ?? false,
      };
      const mac = (await k.macs([headMessage(head, last)]))[0]!;
      await tx`insert into audit_chain_head (id, key_id, entries, legacy_entries, last_id, last_mac, mac, trail_missing)
        values (1, ${head.keyId}, ${head.entries}, ${head.legacyEntries}, ${head.lastId}, ${head.lastMac}, ${mac}, ${head.trailMissing})`;
      knownAnchors.set(k, anchorFingerprint({ ...head, mac }));
    },

    /** Must run inside the transaction of the change it records (fails closed). */
    append(tx: Tx, e: AuditEvent): Promise<void> {
      return this.appendMany(tx, [e]);
    },

    /**
     * Appends entries in order, each its own entry and link, under one hold of the
     * anchor's lock: one read of the anchor, one crypto task for every MAC (the chain's
     * links are computed in the worker, each entry's MAC feeding the next one's message),
     * one multi-row insert and one anchor update. Must run inside the transaction of the
     * change they record (fails closed).
     */
    async appendMany(tx: Tx, events: readonly AuditEvent[]): Promise<void> {
      if (events.length === 0) return;
      let k = requireKey();
      // jsonb's text of each distinct metadata, as verify will read it, asked in the same
      // round trip as the anchor and before it (so not while the lock is held).
      const metadataTexts = new Map<string, string>([['{}', '{}']]);
      const asked: object[] = [];
      const jsons = events.map((e) => JSON.stringify(e.metadata ?? {}));
      for (const [n, e] of events.entries()) {
        const json = jsons[n]!;
        if (!metadataTexts.has(json)) {
          metadataTexts.set(json, '');
          asked.push(e.metadata ?? {});
        }
      }
      const texts =
        asked.length === 0
          ? Promise.resolve([])
          : tx<{ text: string }[]>`select m.value::text as text from jsonb_array_elements(${tx.json(asked as Parameters<Tx['json']>[0])}::jsonb) with ordinality as m(value, n) order by m.n`;
      // The anchor row's lock serialises appends until the commit. Under READ COMMITTED,
      // FOR UPDATE returns the newest committed anchor once it has the lock.
      const [textRows, [anchor]] = await Promise.all([
        texts,
        tx<AnchorRow[]>`select ${tx.unsafe(ANCHOR_COLUMNS)} from audit_chain_head where id = 1 for update`,
      ]);
      let n = 0;
      for (const [json, text] of metadataTexts) if (text === '') metadataTexts.set(json, textRows[n++]!.text);
      if (!anchor) throw new AuditChainError('anchor-missing');
      if (anchor.keyId !== k.keyId) {
        // Re-keyed since this process started: the version the anchor names (proven below).
        const next = await k.resolve?.(anchor.keyId);
        if (!next || next.keyId !== anchor.keyId) throw new AuditChainError('anchor-invalid');
        k = next;
      }
      // Under the lock, the next ids are known: the entries are MACed before they are written.
      const at = new Date(Date.now()); // Millisecond precision, as every keyed entry.
      const entries: ChainRow[] = events.map((e, n) => ({
        id: anchor.lastId + 1 + n,
        prevHash: PREV_PLACEHOLDER,
        hash: Buffer.alloc(0),
        chain: KEYED,
        at,
        atUs: at.getTime() * 1000,
        actorType: e.actorType,
        actorId: e.actorId,
        eventType: e.eventType,
        projectId: e.projectId?.toLowerCase() ?? null,
        environment: e.environment ?? null,
        secretPath: e.secretPath ?? null,
        secretKey: e.secretKey ?? null,
        secretVersion: e.secretVersion ?? null,
        metadataText: metadataTexts.get(jsons[n]!)!,
        metadata: e.metadata ?? {},
        ip: e.ip ?? null,
        keyId: k.keyId,
      }));
      const last = entries[entries.length - 1]!;
      const head: AuditHead = {
        keyId: k.keyId,
        entries: anchor.entries + entries.length,
        legacyEntries: anchor.legacyEntries,
        lastId: last.id,
        lastMac: GENESIS,
        trailMissing: anchor.trailMissing,
      };
      // Extending an edited anchor would make the edit valid: prove it first, unless it is
      // the one this process wrote last (then the proof goes into the same task).
      const known = knownAnchors.get(k) === anchorFingerprint(anchor);
      let proof: ReturnType<typeof anchorProof> | undefined;
      if (!known) {
        const newest = await anchoredEntry(tx, anchor);
        if (anchor.lastId !== 0 && newest === undefined) throw new AuditChainError('anchor-invalid');
        proof = anchorProof(k, anchor, newest);
      }
      const chained = await macChain(k, {
        start: anchor.lastMac,
        links: entries.map((r) => splitAtPrev(entryMessage(r))),
        final: splitAtPrev(headMessage(head, last)),
        extra: proof?.messages ?? [],
      });
      if (proof && !proof.check(chained.extra)) throw new AuditChainError('anchor-invalid');
      const { links, final: headMac } = chained;
      const prev = links[links.length - 1]!;
      // One statement for every entry and the anchor: each column one array parameter
      // (unnest), not one parameter per field: 500 entries were 8,000 parameters, each
      // serialised and parsed on its own (on PGlite about 45 ms against 35). The metadata
      // goes as the jsonb text MACed above; the hashes as hex, decoded by the statement.
      const column = <T>(pick: (r: ChainRow, n: number) => T): T[] => entries.map(pick);
      await tx`with entry as (
          insert into audit_log (id, at, actor_type, actor_id, event_type, project_id, environment, secret_path,
            secret_key, secret_version, metadata, ip, prev_hash, hash, chain, key_id)
          select e.id, ${at}::timestamptz, e.actor_type, e.actor_id, e.event_type, e.project_id, e.environment, e.secret_path,
            e.secret_key, e.secret_version, e.metadata::jsonb, e.ip, decode(e.prev_hash, 'hex'), decode(e.hash, 'hex'), ${KEYED}, ${k.keyId}::uuid
          from unnest(${column((r) => String(r.id))}::bigint[], ${column((r) => r.actorType)}::text[], ${column((r) => r.actorId)}::text[],
            ${column((r) => r.eventType)}::text[], ${column((r) => r.projectId)}::uuid[], ${column((r) => r.environment)}::text[],
            ${column((r) => r.secretPath)}::text[], ${column((r) => r.secretKey)}::text[], ${column((r) => r.secretVersion)}::int[],
            ${column((r) => r.metadataText)}::text[], ${column((r) => r.ip)}::text[],
            ${column((_, n) => (n === 0 ? anchor.lastMac : links[n - 1]!).toString('hex'))}::text[], ${column((_, n) => links[n]!.toString('hex'))}::text[])
            as e(id, actor_type, actor_id, event_type, project_id, environment, secret_path, secret_key, secret_version, metadata, ip, prev_hash, hash))
        update audit_chain_head set entries = ${head.entries}, last_id = ${head.lastId}, last_mac = ${prev}, mac = ${headMac}
        where id = 1`;
      knownAnchors.set(k, anchorFingerprint({ ...head, lastMac: prev, mac: headMac }));
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
      const walk = async (q: Queryable) => {
        // Re-keyed since this process started: verify with the version the anchor names.
        const a = await readAnchor(q);
        const current = a && a.keyId !== k.keyId ? ((await k.resolve?.(a.keyId)) ?? k) : k;
        const { digest: _digest, ...result } = await verifyChain(q, current, opts.recordedHead);
        return result as AuditVerification;
      };
      // A store bound to a transaction already reads one snapshot; the pool opens one.
      const pool = sql as Sql;
      return typeof pool.begin === 'function'
        ? (pool.begin('isolation level repeatable read read only', walk) as Promise<AuditVerification>)
        : walk(sql);
    },
  };
}
export type AuditStore = ReturnType<typeof auditStore>;

/**
 * rekey of the audit key, inside the caller's transaction (which also replaces the key row):
 * the whole chain is verified under `from` first (a broken chain is not blessed), then a
 * checkpoint entry (AUDIT_KEY_CHECKPOINT) is appended, MACed under `to`, whose metadata
 * holds the chain's running digest up to it; the anchor moves to `to`. From then on the
 * entries MACed by `from` are verified against that digest (verifyChain), so `from` can
 * be destroyed in the same transaction: whoever still holds it (an old backup and the old
 * root key) can neither extend the chain nor rewrite the history before the checkpoint.
 */
/**
 * Holds the chain (its lock and its head row) until the transaction ends. A change that
 * appends after locking other rows (the re-key's project row, the audit key's row) takes it
 * first: a writer holds the head while its events row takes a key-share lock on the project,
 * so the other order deadlocks (40P01 in rekeyOnline.test.ts).
 */
export async function lockAuditChain(tx: Tx): Promise<void> {
  await tx`select pg_advisory_xact_lock(${AUDIT_CHAIN_LOCK_ID})`;
  // Appends lock the head row (not always the advisory lock): that is the order to follow.
  await tx`select id from audit_chain_head where id = 1 for update`;
}

export async function rekeyAuditKey(tx: Tx, from: AuditKey, to: AuditKey): Promise<{ entries: number }> {
  await tx`select pg_advisory_xact_lock(${AUDIT_CHAIN_LOCK_ID})`;
  const [anchor] = await tx<AnchorRow[]>`select ${tx.unsafe(ANCHOR_COLUMNS)} from audit_chain_head where id = 1 for update`;
  if (!anchor) throw new AuditChainError('anchor-missing');
  const checked = await verifyChain(tx, from, undefined);
  if (!checked.ok && checked.reason !== 'trail-missing') throw new AuditChainError('anchor-invalid');
  const digest = checked.digest;
  const metadata = { previousKeyId: from.keyId, entries: anchor.entries, digest: digest.toString('hex') };
  const metadataText = (await tx<{ text: string }[]>`select ${tx.json(metadata)}::jsonb::text as text`)[0]!.text;
  const entry: ChainRow = {
    id: anchor.lastId + 1,
    prevHash: anchor.lastMac,
    hash: Buffer.alloc(0),
    chain: KEYED,
    at: new Date(Date.now()),
    atUs: 0,
    actorType: 'system',
    actorId: null,
    eventType: AUDIT_KEY_CHECKPOINT,
    projectId: null,
    environment: null,
    secretPath: null,
    secretKey: null,
    secretVersion: null,
    metadataText,
    metadata,
    ip: null,
    keyId: to.keyId,
  };
  entry.atUs = entry.at.getTime() * 1000;
  const head: AuditHead = {
    keyId: to.keyId,
    entries: anchor.entries + 1,
    legacyEntries: anchor.legacyEntries,
    lastId: entry.id,
    lastMac: GENESIS,
    trailMissing: anchor.trailMissing,
  };
  const [mac, headMac] = (await to.macs([entryMessage(entry), headMessage(head, entry)])) as [Buffer, Buffer];
  await tx`insert into audit_log (id, at, actor_type, actor_id, event_type, metadata, prev_hash, hash, chain, key_id)
    values (${entry.id}, ${entry.at}, ${entry.actorType}, ${entry.actorId}, ${entry.eventType}, ${metadataText}::text::jsonb,
      ${entry.prevHash}, ${mac}, ${KEYED}, ${to.keyId})`;
  await tx`update audit_chain_head set key_id = ${to.keyId}, entries = ${head.entries}, last_id = ${head.lastId},
    last_mac = ${mac}, mac = ${headMac} where id = 1`;
  knownAnchors.set(to, anchorFingerprint({ ...head, lastMac: mac, mac: headMac }));
  return { entries: head.entries };
}

/**
 * Entries MACed by the current key are checked with it. Entries MACed by an older version
 * (destroyed by a rekey) are checked against the digest recorded by the next checkpoint
 * the current key MACed: the first such entry not followed by one breaks the chain there
 * (as does a checkpoint whose digest differs), so moving an entry's key_id off the
 * current key does not exempt it.
 */
async function verifyChain(
  sql: Queryable,
  key: AuditKey,
  recorded: { lastId: number; macPrefix: string } | undefined,
): Promise<AuditVerification & { digest: Buffer }> {
  const anchor = await readAnchor(sql);
  const state = genesisState();
  // Pulled batch by batch: postgres.js does not await a cursor callback's last, partial batch.
  for await (const rows of sql<ChainRow[]>`select ${chainColumns(sql)} from audit_log order by id`.cursor(VERIFY_BATCH)) {
    await walkRows(state, rows, key, recorded);
  }
  return finishChain(state, anchor, key, recorded);
}

/** Where a walk along the chain stands: everything needed to continue it from there. */
export interface WalkState {
  digest: Buffer;
  pending: number | undefined;
  prev: Buffer;
  entries: number;
  legacy: number;
  lastId: number;
  keyedSeen: boolean;
  recordedFound: boolean;
  brokenAt: number | undefined;
  last: ChainRow | undefined;
  unrecordedAt: number | undefined;
  /** Rows of audit_log this walk read. */
  read: number;
}

export const genesisState = (): WalkState => ({
  digest: GENESIS,
  pending: undefined,
  prev: GENESIS,
  entries: 0,
  legacy: 0,
  lastId: 0,
  keyedSeen: false,
  recordedFound: false,
  brokenAt: undefined,
  last: undefined,
  unrecordedAt: undefined,
  read: 0,
});

/** Extends `s` over `rows` (the next ones by id). Rows after a break are only counted. */
export async function walkRows(s: WalkState, rows: ChainRow[], key: AuditKey, recorded: { lastId: number; macPrefix: string } | undefined): Promise<void> {
  s.read += rows.length;
  // Each MAC depends on stored values only: a batch goes to the workers at once.
  const keyed = s.brokenAt === undefined ? rows.filter((r) => r.chain === KEYED && r.keyId === key.keyId) : [];
  const macOf = new Map<ChainRow, Buffer>();
  if (keyed.length) (await key.macs(keyed.map(entryMessage))).forEach((m, i) => macOf.set(keyed[i]!, m));
  for (const r of rows) {
    s.entries++;
    if (s.brokenAt !== undefined) continue;
    let holds: boolean;
    if (r.chain === LEGACY) {
      // Legacy entries all come before the first keyed one.
      holds = !s.keyedSeen && r.hash.equals(legacyEntryHash(s.prev, r));
      s.legacy++;
      // And they are the ones the instance recorded when it was upgraded, no other.
      const rec = key.legacy;
      if (holds && rec && (s.legacy > rec.entries || r.id > rec.lastId || (r.id === rec.lastId && r.hash.toString('hex') !== rec.head))) {
        s.unrecordedAt = r.id;
        s.brokenAt = r.id;
        continue;
      }
    } else if (r.chain === KEYED && r.keyId === key.keyId) {
      s.keyedSeen = true;
      holds = sameBytes(r.hash, macOf.get(r)!);
      // A checkpoint entry vouches for every entry before it, by their digest.
      if (holds && r.eventType === AUDIT_KEY_CHECKPOINT) {
        if (r.metadata.digest === s.digest.toString('hex')) s.pending = undefined;
        else holds = false;
      }
    } else if (r.chain === KEYED) {
      s.keyedSeen = true;
      holds = true;
      s.pending ??= r.id;
    } else {
      holds = false;
    }
    if (!holds || !r.prevHash.equals(s.prev)) {
      s.brokenAt = r.id;
      continue;
    }
    s.digest = chainDigest(s.digest, r);
    if (recorded && r.id === recorded.lastId) s.recordedFound = r.hash.toString('hex').startsWith(recorded.macPrefix);
    s.prev = r.hash;
    s.lastId = r.id;
    s.last = r;
  }
}

/** The verdict once a walk reached the end of the chain: the entries, then the anchor. */
export async function finishChain(
  s: WalkState,
  anchor: AnchorRow | undefined,
  key: AuditKey,
  recorded: { lastId: number; macPrefix: string } | undefined,
): Promise<AuditVerification & { digest: Buffer }> {
  const { entries, legacy, lastId, prev, last, digest } = s;
  let brokenAt = s.brokenAt;
  const broken = (at: number | null, reason: AuditBreak) => ({ ok: false as const, entries, brokenAt: at, reason, digest });
  if (brokenAt === undefined && s.pending !== undefined) brokenAt = s.pending;
  if (s.unrecordedAt !== undefined) return broken(s.unrecordedAt, 'legacy-unrecorded');
  if (brokenAt !== undefined) return broken(brokenAt, 'entry');
  // Fewer legacy entries than recorded: some were removed (with the anchor, re-made).
  if (key.legacy && legacy !== key.legacy.entries) return broken(null, 'legacy-unrecorded');
  if (!anchor) return broken(null, 'anchor-missing');
  // The anchor's MAC, over the newest entry found.
  const [anchorMac] = await key.macs([headMessage(anchor, last)]);
  const anchorMacHolds = anchor.keyId === key.keyId && sameBytes(anchor.mac, anchorMac!);
  // The anchor names another end than the chain has (a removed tail, entries added or
  // re-hashed, or an edited anchor: its MAC covers the entry it names, which may be gone).
  if (anchor.entries !== entries || anchor.legacyEntries !== legacy || anchor.lastId !== lastId || !anchor.lastMac.equals(prev)) {
    return { ...broken(null, 'head-mismatch'), anchored: { entries: anchor.entries, lastId: anchor.lastId }, found: { entries, lastId } };
  }
  // Same end, but the MAC does not hold: the anchor itself (its MAC or key) was edited.
  if (!anchorMacHolds) return broken(null, 'anchor-invalid');
  if (recorded && !s.recordedFound) return broken(null, 'recorded-head-missing');
  // Every entry and the anchor hold, but the chain began where a deleted trail ended.
  if (anchor.trailMissing) return broken(null, 'trail-missing');
  return {
    ok: true,
    entries,
    head: { keyId: anchor.keyId, entries, legacyEntries: legacy, lastId, lastMac: prev, trailMissing: false },
    digest,
  };
}
