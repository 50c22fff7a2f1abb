// Verifying the audit chain without walking all of it on every check (issue 31 points 4
// and 9), and walking all of it off the request path:
//
// - Keyed checkpoints (table audit_checkpoints): "the chain through id lastId verified,
//   its head there lastMac, its running digest digest", MACed under the audit key (which
//   the database does not hold), each naming the checkpoint before it. `incremental`
//   continues from the newest one (its MAC proven), reading only the newer entries.
// - `full` reads every entry from the first one (or from the prune boundary retention
//   left) and every checkpoint: each must hold under its key, name its predecessor, and
//   agree with the chain where it stands. An entry edited or deleted before the newest
//   checkpoint, and a checkpoint edited, forged or deleted, are found here.
// - The latest full walk's verdict (table audit_verify_runs), MACed under the audit key.
//
// Both walks read in short statements of `chunk` rows with a turn of the event loop
// between them: no transaction spans a walk, so on the embedded database (one
// connection) other callers' statements run between chunks.
import {
  chainColumns,
  finishChain,
  genesisState,
  readAnchor,
  sameBytes,
  walkRows,
  AuditChainError,
  type AnchorRow,
  type AuditBreak,
  type AuditKey,
  type AuditVerification,
  type ChainRow,
  type WalkState,
} from './audit.js';
import type { Queryable } from './db.js';

const CHECKPOINT_LABEL = 'vault-standalone/audit-checkpoint/v2';
const RECORD_LABEL = 'vault-standalone/audit-full-verify/v1';

/** A point of the chain a walk reached: enough to continue it from there. */
export interface ChainPoint {
  keyId: string;
  lastId: number;
  /** Entries of the chain through lastId, pruned ones included. */
  entries: number;
  legacyEntries: number;
  lastMac: Buffer;
  digest: Buffer;
  /** Entries archived and deleted before the online chain (equal to entries at the prune boundary). */
  pruned: number;
}

export interface AuditCheckpoint extends ChainPoint {
  /** The checkpoint before this one (0: none), under the MAC: a deleted one leaves a gap. */
  prevLastId: number;
  mac: Buffer;
}

const CHECKPOINT_COLUMNS = 'key_id, last_id, prev_last_id, entries, legacy_entries, last_mac, digest, pruned, mac';

export function checkpointMessage(c: Omit<AuditCheckpoint, 'mac'>): string {
  return JSON.stringify([
    CHECKPOINT_LABEL,
    c.keyId,
    c.lastId,
    c.prevLastId,
    c.entries,
    c.legacyEntries,
    c.lastMac.toString('hex'),
    c.digest.toString('hex'),
    c.pruned,
  ]);
}

export async function makeCheckpoint(key: AuditKey, c: Omit<AuditCheckpoint, 'mac' | 'keyId'>): Promise<AuditCheckpoint> {
  const body = { ...c, keyId: key.keyId };
  const [mac] = await key.macs([checkpointMessage(body)]);
  return { ...body, mac: mac! };
}

async function checkpointHolds(key: AuditKey, c: AuditCheckpoint): Promise<boolean> {
  if (c.keyId !== key.keyId) return false;
  const [mac] = await key.macs([checkpointMessage(c)]);
  return sameBytes(c.mac, mac!);
}

const numeric = (c: AuditCheckpoint): AuditCheckpoint => ({
  ...c,
  lastId: Number(c.lastId),
  prevLastId: Number(c.prevLastId),
  entries: Number(c.entries),
  legacyEntries: Number(c.legacyEntries),
  pruned: Number(c.pruned),
});

/**
 * Appends a checkpoint after the newest one, which it names. Written only if that is
 * still the newest and has no successor yet (unique prev_last_id: another replica may
 * have written one meanwhile; then this one is skipped, never forked). Returns whether
 * it was written.
 */
export async function appendCheckpoint(sql: Queryable, key: AuditKey, p: Omit<ChainPoint, 'keyId'>): Promise<boolean> {
  const [newest] = await sql<{ lastId: number }[]>`select last_id from audit_checkpoints order by last_id desc limit 1`;
  const prevLastId = Number(newest?.lastId ?? 0);
  if (p.lastId <= prevLastId) return false;
  const c = await makeCheckpoint(key, { ...p, prevLastId });
  const r = await sql`insert into audit_checkpoints (key_id, last_id, prev_last_id, entries, legacy_entries, last_mac, digest, pruned, mac)
    select ${c.keyId}, ${c.lastId}, ${c.prevLastId}, ${c.entries}, ${c.legacyEntries}, ${c.lastMac}, ${c.digest}, ${c.pruned}, ${c.mac}
    where coalesce((select max(last_id) from audit_checkpoints), 0) = ${prevLastId}
    on conflict do nothing`;
  return r.count === 1;
}

/** Where a walk from point `c` starts: its end, vouched for by its MAC (or this process's memory). */
function stateAt(c: ChainPoint): WalkState {
  return {
    ...genesisState(),
    digest: c.digest,
    prev: c.lastMac,
    entries: c.entries,
    legacy: c.legacyEntries,
    lastId: c.lastId,
    keyedSeen: c.entries > c.legacyEntries,
  };
}

const pointOf = (s: WalkState, keyId: string, pruned: number): ChainPoint => ({
  keyId,
  lastId: s.lastId,
  entries: s.entries,
  legacyEntries: s.legacy,
  lastMac: s.prev,
  digest: s.digest,
  pruned,
});

type Verdict = AuditVerification;
type Recorded = { lastId: number; macPrefix: string } | undefined;

/** What an incremental verify answers: a verdict (with the point it reached), or how far it got when told to stop. */
export type IncrementalVerification =
  | (Verdict & { complete: true; from: number; read: number; tip?: ChainPoint; newestCheckpoint: number })
  | { ok: null; complete: false; entries: number; lastId: number; of: number; from: number; read: number; tip?: ChainPoint; newestCheckpoint: number };

export interface WalkOptions {
  recordedHead?: { lastId: number; macPrefix: string };
  /** Rows per statement (each its own short query: no transaction spans the walk). */
  chunk?: number;
  /** Asked between chunks: false stops the walk there. */
  shouldContinue?: () => boolean;
  /** Between chunks (default: a turn of the event loop, so other callers' work runs). */
  pause?: () => Promise<void>;
  onProgress?: (p: { entries: number; lastId: number; of: number }) => void;
}

export interface IncrementalOptions extends WalkOptions {
  /** Write a checkpoint at the end (and every checkpointEvery entries); the CLI writes none. */
  write?: boolean;
  checkpointEvery?: number;
  /**
   * A point this process verified itself (kept in its memory, out of a database writer's
   * reach): the walk continues from it when it is newer than the newest checkpoint.
   */
  tip?: ChainPoint;
  /** The newest checkpoint this process knows of: a newest one older than it was deleted. */
  expectCheckpoint?: number;
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

async function keyFor(base: AuditKey, keyId: string | undefined): Promise<AuditKey> {
  return keyId && keyId !== base.keyId ? ((await base.resolve?.(keyId)) ?? base) : base;
}

/** Entries beyond the anchor (as it stands now, in one snapshot with them) were never anchored. */
async function pastAnchor(sql: Queryable, s: WalkState, anchor: AnchorRow): Promise<Verdict | undefined> {
  const [tail] = await sql<{ head: number | null; max: number | null }[]>`select
      (select last_id from audit_chain_head where id = 1) as head, (select max(id) from audit_log) as max`;
  if (tail && tail.max !== null && Number(tail.max) > Number(tail.head ?? 0)) {
    return {
      ok: false,
      entries: s.entries,
      brokenAt: null,
      reason: 'head-mismatch',
      anchored: { entries: Number(anchor.entries), lastId: Number(anchor.lastId) },
      found: { entries: s.entries, lastId: Number(tail.max) },
    };
  }
  return undefined;
}

const strip = (r: Verdict & { digest?: Buffer }): Verdict => {
  const { digest: _d, ...rest } = r;
  return rest as Verdict;
};

/**
 * Verifies the chain from the newest checkpoint (its MAC proven) or the caller's own tip,
 * whichever is newer, to the anchor; then checks the anchor as verify does and that no
 * entry lies beyond it. Entries before the start are not read again: that is the full
 * walk's part. A checkpoint that does not verify, names entries beyond the anchor, or is
 * older than one the caller knew of, is a broken chain.
 */
export async function verifyIncremental(sql: Queryable, base: AuditKey, opts: IncrementalOptions = {}): Promise<IncrementalVerification> {
  const chunk = opts.chunk ?? 2_000;
  const every = opts.checkpointEvery ?? 20_000;
  const pause = opts.pause ?? nextTurn;
  const recorded = opts.recordedHead;
  const anchorRow = await readAnchor(sql);
  const key = await keyFor(base, anchorRow?.keyId);
  const points = (
    await sql<AuditCheckpoint[]>`(select ${sql.unsafe(CHECKPOINT_COLUMNS)} from audit_checkpoints where pruned = entries and pruned > 0 order by last_id desc limit 1)
      union all (select ${sql.unsafe(CHECKPOINT_COLUMNS)} from audit_checkpoints where key_id = ${key.keyId} order by last_id desc limit 1)
      union all (select ${sql.unsafe(CHECKPOINT_COLUMNS)} from audit_checkpoints order by last_id desc limit 1)`
  ).map(numeric);
  const boundary = points[0] && points[0].pruned === points[0].entries && points[0].pruned > 0 ? points[0] : undefined;
  const newestAny = points.reduce((a, p) => Math.max(a, p.lastId), 0);
  const newest = points.filter((p) => p.keyId === key.keyId).reduce<AuditCheckpoint | undefined>((a, p) => (!a || p.lastId > a.lastId ? p : a), undefined);
  const done = (r: Verdict, from: number, read: number, tip?: ChainPoint): IncrementalVerification => ({
    ...strip(r),
    complete: true,
    from,
    read,
    ...(tip ? { tip } : {}),
    newestCheckpoint: newestAny,
  });
  const brokenAt = (at: number, entries: number, reason: AuditBreak) => done({ ok: false, entries, brokenAt: at, reason }, at, 0);
  for (const c of [boundary, newest]) {
    if (c && !(await checkpointHolds(key, c))) return brokenAt(c.lastId, c.entries, 'checkpoint-invalid');
  }
  if (opts.expectCheckpoint !== undefined && newestAny < opts.expectCheckpoint) return brokenAt(opts.expectCheckpoint, 0, 'checkpoint-missing');
  if (!anchorRow) return done({ ok: false, entries: 0, brokenAt: null, reason: 'anchor-missing' }, 0, 0);
  // A valid checkpoint (or a point this process verified) past the head: the newest entries and the anchor were rolled back.
  if (newest && newest.lastId > anchorRow.lastId) return brokenAt(newest.lastId, newest.entries, 'checkpoint-ahead');
  const tip = opts.tip && opts.tip.keyId === key.keyId ? opts.tip : undefined;
  if (tip && tip.lastId > anchorRow.lastId) return brokenAt(tip.lastId, tip.entries, 'checkpoint-ahead');
  const start: ChainPoint | undefined = tip && tip.lastId > (newest?.lastId ?? 0) ? tip : (newest ?? boundary);
  const s = start ? stateAt(start) : genesisState();
  const from = start?.lastId ?? 0;
  const pruned = boundary?.pruned ?? 0;
  if (start) {
    // The entry the start ends at (gone only at a prune boundary, where it was archived).
    const [row] = await sql<ChainRow[]>`select ${chainColumns(sql)} from audit_log where id = ${start.lastId}`;
    s.read += row ? 1 : 0;
    if (row) {
      if (!row.hash.equals(start.lastMac)) return done({ ok: false, entries: start.entries, brokenAt: start.lastId, reason: 'entry' }, from, s.read);
      s.last = row;
    } else if (start !== boundary) {
      return done({ ok: false, entries: start.entries, brokenAt: start.lastId, reason: 'entry' }, from, s.read);
    }
    if (recorded && recorded.lastId <= start.lastId) {
      const [r] = await sql<{ hash: Buffer }[]>`select hash from audit_log where id = ${recorded.lastId}`;
      s.recordedFound = r !== undefined && r.hash.toString('hex').startsWith(recorded.macPrefix);
    }
  }
  let newestCheckpoint = newestAny;
  const clean = () => s.brokenAt === undefined && s.pending === undefined && s.unrecordedAt === undefined;
  const checkpoint = async () => {
    if (!opts.write || !clean() || s.lastId <= newestCheckpoint) return;
    if (await appendCheckpoint(sql, key, pointOf(s, key.keyId, pruned))) newestCheckpoint = s.lastId;
  };
  const target = Number(anchorRow.lastId);
  let after = s.lastId;
  let sinceCheckpoint = 0;
  while (after < target && s.brokenAt === undefined) {
    const rows = await sql<ChainRow[]>`select ${chainColumns(sql)} from audit_log where id > ${after} and id <= ${target} order by id limit ${chunk}`;
    if (rows.length === 0) break;
    await walkRows(s, rows, key, recorded);
    after = Number(rows[rows.length - 1]!.id);
    sinceCheckpoint += rows.length;
    opts.onProgress?.({ entries: s.entries, lastId: s.lastId, of: Number(anchorRow.entries) });
    if (sinceCheckpoint >= every) {
      await checkpoint();
      sinceCheckpoint = 0;
    }
    if (after < target && s.brokenAt === undefined) {
      if (opts.shouldContinue && !opts.shouldContinue()) {
        await checkpoint();
        return {
          ok: null,
          complete: false,
          entries: s.entries,
          lastId: s.lastId,
          of: Number(anchorRow.entries),
          from,
          read: s.read,
          ...(clean() ? { tip: pointOf(s, key.keyId, pruned) } : {}),
          newestCheckpoint,
        };
      }
      await pause();
    }
  }
  if (s.brokenAt === undefined) {
    const past = await pastAnchor(sql, s, anchorRow);
    if (past) return done(past, from, s.read);
  }
  const result = await finishChain(s, anchorRow, key, recorded);
  if (!result.ok) return done(result, from, s.read);
  await checkpoint();
  return { ...done(result, from, s.read, pointOf(s, key.keyId, pruned)), newestCheckpoint };
}

/** What a full walk answers: a verdict with what it read, or how far it got when told to stop. */
export type FullVerification =
  | (Verdict & { complete: true; read: number; checkpoints: number; newestCheckpoint: number })
  | { ok: null; complete: false; entries: number; lastId: number; of: number; read: number; checkpoints: number; newestCheckpoint: number };

/**
 * Reads every entry from the first one (or the prune boundary) to the anchor, and every
 * checkpoint: its MAC under its key version (a destroyed version's are checked against
 * the chain only), its link to the one before it, and that the chain, where it stands,
 * is what it vouches for. The first break in chain order is named.
 */
export async function verifyFull(sql: Queryable, base: AuditKey, opts: WalkOptions & { write?: boolean } = {}): Promise<FullVerification> {
  const chunk = opts.chunk ?? 2_000;
  const pause = opts.pause ?? nextTurn;
  const recorded: Recorded = opts.recordedHead;
  const anchorRow = await readAnchor(sql);
  const key = await keyFor(base, anchorRow?.keyId);
  const all = (await sql<AuditCheckpoint[]>`select ${sql.unsafe(CHECKPOINT_COLUMNS)} from audit_checkpoints order by last_id`).map(numeric);
  let b = -1;
  all.forEach((c, i) => {
    if (c.pruned === c.entries && c.pruned > 0) b = i;
  });
  // Checkpoints before the prune boundary went with the entries they vouched for.
  const cps = b >= 0 ? all.slice(b) : all;
  const boundary = b >= 0 ? all[b] : undefined;
  const newestCheckpoint = all.at(-1)?.lastId ?? 0;

  // Each checkpoint's MAC, under its key version where that still exists.
  const invalid = new Set<number>();
  const keys = new Map<string, AuditKey | undefined>([[key.keyId, key]]);
  for (const c of cps) if (!keys.has(c.keyId)) keys.set(c.keyId, await base.resolve?.(c.keyId));
  for (const [keyId, k] of keys) {
    const mine = cps.filter((c) => c.keyId === keyId);
    if (!k || mine.length === 0) continue;
    const macs = await k.macs(mine.map(checkpointMessage));
    mine.forEach((c, i) => {
      if (!sameBytes(c.mac, macs[i]!)) invalid.add(c.lastId);
    });
  }
  // Each names the one before it (the first after the boundary may name an archived one).
  const missing = new Set<number>();
  cps.forEach((c, i) => {
    const prev = cps[i - 1];
    if (!prev) {
      if (!boundary && c.prevLastId !== 0) missing.add(c.lastId);
    } else if (c.prevLastId !== prev.lastId && !(prev === boundary && c.prevLastId < boundary.lastId)) {
      missing.add(c.lastId);
    }
  });

  let checked = 0;
  const result = (r: Verdict, s: WalkState): FullVerification => ({ ...strip(r), complete: true, read: s.read, checkpoints: checked, newestCheckpoint });
  const empty = genesisState();
  if (!anchorRow) return result({ ok: false, entries: 0, brokenAt: null, reason: 'anchor-missing' }, empty);
  if (boundary) {
    checked++;
    if (invalid.has(boundary.lastId)) return result({ ok: false, entries: boundary.entries, brokenAt: boundary.lastId, reason: 'checkpoint-invalid' }, empty);
  }
  const s = boundary ? stateAt(boundary) : genesisState();
  let cpBreak: { at: number; reason: AuditBreak } | undefined;
  const pending = cps.filter((c) => c !== boundary);
  let next = 0;
  const unlanded: AuditCheckpoint[] = [];
  const checkAt = (c: AuditCheckpoint) => {
    checked++;
    if (s.brokenAt !== undefined) return;
    let reason: AuditBreak | undefined;
    if (missing.has(c.lastId)) reason = 'checkpoint-missing';
    else if (invalid.has(c.lastId)) reason = 'checkpoint-invalid';
    else if (
      s.lastId !== c.lastId ||
      s.entries !== c.entries ||
      s.legacy !== c.legacyEntries ||
      !s.prev.equals(c.lastMac) ||
      !s.digest.equals(c.digest)
    ) {
      reason = 'checkpoint-invalid';
    }
    if (reason) {
      cpBreak = { at: c.lastId, reason };
      s.brokenAt = c.lastId;
    }
  };

  const target = Number(anchorRow.lastId);
  let after = s.lastId;
  while (after < target) {
    const rows = await sql<ChainRow[]>`select ${chainColumns(sql)} from audit_log where id > ${after} and id <= ${target} order by id limit ${chunk}`;
    if (rows.length === 0) break;
    let from = 0;
    for (let j = 0; j < rows.length; j++) {
      const id = Number(rows[j]!.id);
      // A checkpoint whose entry is not there (its removal breaks the next link, named by the walk).
      while (next < pending.length && pending[next]!.lastId < id) unlanded.push(pending[next++]!);
      if (next < pending.length && pending[next]!.lastId === id) {
        await walkRows(s, rows.slice(from, j + 1), key, recorded);
        from = j + 1;
        checkAt(pending[next++]!);
      }
    }
    await walkRows(s, rows.slice(from), key, recorded);
    after = Number(rows[rows.length - 1]!.id);
    opts.onProgress?.({ entries: s.entries, lastId: s.lastId, of: Number(anchorRow.entries) });
    if (after < target) {
      if (opts.shouldContinue && !opts.shouldContinue()) {
        return { ok: null, complete: false, entries: s.entries, lastId: s.lastId, of: Number(anchorRow.entries), read: s.read, checkpoints: checked, newestCheckpoint };
      }
      await pause();
    }
  }
  if (cpBreak && s.brokenAt === cpBreak.at) return result({ ok: false, entries: s.entries, brokenAt: cpBreak.at, reason: cpBreak.reason }, s);
  if (s.brokenAt === undefined) {
    const past = await pastAnchor(sql, s, anchorRow);
    if (past) return result(past, s);
  }
  const verdict = await finishChain(s, anchorRow, key, recorded);
  if (!verdict.ok) return result(verdict, s);
  // The chain holds: a checkpoint it never reached vouches for entries it does not have.
  for (const c of [...unlanded, ...pending.slice(next)]) {
    checked++;
    return result({ ok: false, entries: s.entries, brokenAt: c.lastId, reason: c.lastId > target ? 'checkpoint-ahead' : 'checkpoint-invalid' }, s);
  }
  // Everything holds through the head: a checkpoint there saves the next incremental walk the trail.
  if (opts.write && s.pending === undefined && s.lastId > newestCheckpoint) await appendCheckpoint(sql, key, pointOf(s, key.keyId, boundary?.pruned ?? 0));
  return result(verdict, s);
}

/** The latest full walk's verdict as stored (audit_verify_runs), MACed under the audit key. */
export interface FullVerifyRecord {
  runId: string;
  keyId: string;
  startedAt: Date;
  finishedAt: Date;
  ok: boolean;
  entries: number;
  /** Entries read (the online chain). */
  read: number;
  checkpoints: number;
  /** The newest checkpoint when the walk began: a newest one older than it since was deleted. */
  newestCheckpoint: number;
  brokenAt: number | null;
  reason: AuditBreak | null;
  /** JSON: anchored/found of a head-mismatch. */
  detail: string;
}

function recordMessage(r: FullVerifyRecord): string {
  return JSON.stringify([
    RECORD_LABEL,
    r.keyId,
    r.runId,
    r.startedAt.toISOString(),
    r.finishedAt.toISOString(),
    r.ok,
    r.entries,
    r.read,
    r.checkpoints,
    r.newestCheckpoint,
    r.brokenAt,
    r.reason,
    r.detail,
  ]);
}

const RECORD_COLUMNS = 'run_id, key_id, started_at, finished_at, ok, entries, read, checkpoints, newest_checkpoint, broken_at, reason, detail, mac';

export function auditVerifyStore(sql: Queryable, key?: AuditKey) {
  const requireKey = (): AuditKey => {
    if (!key) throw new AuditChainError('no-key');
    return key;
  };
  return {
    /** From the newest keyed checkpoint (or the caller's tip) to the head: see verifyIncremental. */
    incremental(opts: IncrementalOptions = {}): Promise<IncrementalVerification> {
      return verifyIncremental(sql, requireKey(), opts);
    },
    /** Every entry and every checkpoint: see verifyFull. */
    full(opts: WalkOptions & { write?: boolean } = {}): Promise<FullVerification> {
      return verifyFull(sql, requireKey(), opts);
    },
    /** Stores a full walk's verdict under the audit key, unless a newer one is stored. */
    async saveFullRecord(r: Omit<FullVerifyRecord, 'keyId'>): Promise<void> {
      const k = requireKey();
      const rec: FullVerifyRecord = { ...r, keyId: k.keyId };
      const [mac] = await k.macs([recordMessage(rec)]);
      await sql`insert into audit_verify_runs (id, run_id, key_id, started_at, finished_at, ok, entries, read, checkpoints, newest_checkpoint, broken_at, reason, detail, mac)
        values (1, ${rec.runId}, ${rec.keyId}, ${rec.startedAt}, ${rec.finishedAt}, ${rec.ok}, ${rec.entries}, ${rec.read}, ${rec.checkpoints},
          ${rec.newestCheckpoint}, ${rec.brokenAt}, ${rec.reason}, ${rec.detail}, ${mac!})
        on conflict (id) do update set run_id = excluded.run_id, key_id = excluded.key_id, started_at = excluded.started_at,
          finished_at = excluded.finished_at, ok = excluded.ok, entries = excluded.entries, read = excluded.read,
          checkpoints = excluded.checkpoints, newest_checkpoint = excluded.newest_checkpoint, broken_at = excluded.broken_at,
          reason = excluded.reason, detail = excluded.detail, mac = excluded.mac
        where audit_verify_runs.finished_at <= excluded.finished_at`;
    },
    /**
     * The stored verdict and whether its MAC holds (false: it was forged or edited);
     * undefined when there is none, or it is MACed by a key version that no longer exists.
     */
    async fullRecord(): Promise<{ record: FullVerifyRecord; holds: boolean } | undefined> {
      const [row] = await sql<(FullVerifyRecord & { mac: Buffer })[]>`select ${sql.unsafe(RECORD_COLUMNS)} from audit_verify_runs where id = 1`;
      if (!row) return undefined;
      const { mac, ...rest } = row;
      const record: FullVerifyRecord = {
        ...rest,
        entries: Number(rest.entries),
        read: Number(rest.read),
        checkpoints: Number(rest.checkpoints),
        newestCheckpoint: Number(rest.newestCheckpoint),
        brokenAt: rest.brokenAt === null ? null : Number(rest.brokenAt),
      };
      const base = requireKey();
      const k = record.keyId === base.keyId ? base : await base.resolve?.(record.keyId);
      if (!k) return record.keyId === base.keyId ? { record, holds: false } : undefined;
      const [expected] = await k.macs([recordMessage(record)]);
      return { record, holds: sameBytes(mac, expected!) };
    },
  };
}
export type AuditVerifyStore = ReturnType<typeof auditVerifyStore>;
