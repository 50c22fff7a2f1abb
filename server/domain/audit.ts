// Reading the audit trail: the superadmin sees every entry; a project admin sees the
// entries of its project only. Entries are written by the domain that makes each change,
// inside its transaction (storage/audit.ts append), never here. Also the audit key: the
// data key the chain is MACed with, created with the chain's anchor at first start.
import { randomUUID } from 'node:crypto';
import type { Crypto } from '../../crypto/index.js';
import type { Store } from '../../storage/index.js';
import {
  AuditChainError,
  type AuditFilter,
  type AuditHead,
  type AuditKey,
  type AuditListRow,
  type LegacyRecord,
} from '../../storage/audit.js';
import { AppError } from '../errors.js';
import { requireOrgAdmin, type AccessControl, type Actor, type SystemActor } from './access.js';
import type { AuditVerifier, AuditVerifyResult } from './auditVerifier.js';
import { dataKeyAad, WrongEncryptionKeyError, type InstanceRecord } from './keyring.js';

/** The audit trail cannot be opened for writing: the service must not start. */
export class AuditTrailError extends Error {
  override readonly name = 'AuditTrailError';
}

export const AUDIT_TRAIL_ANCHOR_MISSING =
  'the audit trail has been keyed, but its head anchor (table audit_chain_head) is missing: the database was ' +
  'tampered with or partly restored. Refusing to start (nothing could be audited). Run audit-verify, and restore ' +
  'the database from a backup whose audit head matches the one recorded out of band.';
export const AUDIT_TRAIL_ANCHOR_INVALID =
  'the audit trail\'s head anchor (table audit_chain_head) does not verify under the audit key: it was edited. ' +
  'Refusing to start (nothing could be audited). Run audit-verify, and restore the database from a backup ' +
  'whose audit head matches the one recorded out of band.';

/**
 * The audit key `keyId` (wrapped bytes `wrapped`). `store` lets it follow a rekey made
 * while this process runs: `resolve` loads the version the anchor names (purpose 'audit'),
 * once per version.
 */
export function auditKeyOf(
  crypto: Pick<Crypto, 'macMany'> & Partial<Pick<Crypto, 'macChain'>>,
  keyId: string,
  wrapped: Buffer,
  store?: Pick<Store, 'keys'>,
  legacy?: LegacyRecord,
): AuditKey {
  const versions = new Map<string, AuditKey>();
  const make = (id: string, w: Buffer): AuditKey => {
    const key: AuditKey = {
      keyId: id,
      macs: (messages) => crypto.macMany(w, dataKeyAad(id), messages),
      ...(crypto.macChain ? { macChain: (chain) => crypto.macChain!(w, dataKeyAad(id), chain) } : {}),
      ...(store ? { resolve: resolveVersion } : {}),
      ...(legacy ? { legacy } : {}),
    };
    versions.set(id, key);
    return key;
  };
  async function resolveVersion(id: string): Promise<AuditKey | undefined> {
    const known = versions.get(id);
    if (known) return known;
    const row = await store!.keys.get(id);
    return row?.purpose === 'audit' ? make(row.id, row.wrapped) : undefined;
  }
  return make(keyId, wrapped);
}

/**
 * At start: the audit key. On the first start (also the first after the upgrade that
 * keyed the chain) a random data key is generated, stored only wrapped beside the
 * others (so rotate-key re-wraps it), and the chain is anchored at its current end.
 * Refuses a chain whose anchor is missing or edited: appends could not extend it.
 *
 * `record` (the instance record, sealed in the canary) says which entries predate the
 * keyed chain: a new anchor over any other non-empty trail, or over an instance that
 * already holds data, is sealed as trail-missing and reported (the trail was deleted or
 * rewritten with its anchor and key); and verify refuses legacy entries it does not name.
 */
export async function openAuditKey(store: Store, crypto: Crypto, record: InstanceRecord): Promise<AuditKey> {
  if (!(await store.audit.anchor())) {
    await store.transaction(async (s) => {
      // Replicas starting together: one anchors, the others wait and find the anchor.
      await s.audit.lockChain(s.tx);
      if (await s.audit.anchor()) return;
      if (await s.keys.audit()) throw new AuditTrailError(AUDIT_TRAIL_ANCHOR_MISSING);
      // A first start, or a first start after the whole trail (key, anchor, entries) was
      // deleted: the latter is sealed into the new anchor, and verify reports it.
      // A new anchor over a non-empty trail is a trail someone deleted or rewrote, unless the
      // trail is exactly the pre-keyed one the instance recorded at its upgrade.
      const trailMissing = !(await s.audit.isRecordedLegacy(s.tx, record.legacy)) || (await s.audit.trailMissing(s.tx));
      const id = randomUUID();
      const wrapped = await crypto.generateDataKey(dataKeyAad(id));
      await s.keys.insert({ id, purpose: 'audit', rootKeyVersion: crypto.rootKeyVersion, wrapped });
      await s.audit.createAnchor(s.tx, auditKeyOf(crypto, id, wrapped), { trailMissing }).catch((err: unknown) => {
        throw err instanceof AuditChainError ? new AuditTrailError(AUDIT_TRAIL_ANCHOR_MISSING) : err;
      });
    });
  }
  const key = await loadAuditKey(store, crypto, record.legacy);
  if (!(await store.audit.anchorHolds(key))) throw new AuditTrailError((await store.audit.anchor()) ? AUDIT_TRAIL_ANCHOR_INVALID : AUDIT_TRAIL_ANCHOR_MISSING);
  return key;
}

/** Read-only (audit-verify, rotate-key): the audit key, proven to unwrap under this crypto's root key. */
export async function loadAuditKey(
  store: Pick<Store, 'keys' | 'audit'>,
  crypto: Pick<Crypto, 'macMany'> & Partial<Pick<Crypto, 'macChain'>>,
  /** The legacy entries the instance record names (verify refuses others); see openAuditKey. */
  legacy?: LegacyRecord,
): Promise<AuditKey> {
  // By purpose, not by the anchor's key_id: an edited key_id is then a failed anchor MAC.
  const row = await store.keys.audit();
  if (!row) {
    throw new AuditTrailError(
      (await store.audit.anchor())
        ? 'the audit key (a crypto_keys row) was deleted: the audit trail can no longer be verified or extended'
        : 'the audit trail is not keyed yet: start the service (this version) once, then retry',
    );
  }
  const key = auditKeyOf(crypto, row.id, row.wrapped, store, legacy);
  try {
    await key.macs(['vault-standalone/audit-key-check']);
  } catch (err) {
    if ((err as { code?: string }).code === 'UNWRAP_FAILED') throw new WrongEncryptionKeyError();
    throw err;
  }
  return key;
}

/** What an operator records out of band: the count, the last id and a prefix of the last MAC. */
export interface AuditHeadSummary {
  entries: number;
  legacyEntries: number;
  lastId: number;
  /** The first 16 hex characters of the last entry's MAC. */
  mac: string;
}

export const AUDIT_HEAD_MAC_CHARS = 16;

export const headSummary = (h: AuditHead): AuditHeadSummary => ({
  entries: h.entries,
  legacyEntries: h.legacyEntries,
  lastId: h.lastId,
  mac: h.lastMac.toString('hex').slice(0, AUDIT_HEAD_MAC_CHARS),
});

/**
 * What the start-up log says of a trail that was deleted before this chain began (the
 * service keeps serving; verify, audit-verify and the admin UI report it as broken).
 */
export const TRAIL_MISSING_WARNING =
  'audit trail BROKEN: this audit chain was started anew (its key and anchor had been deleted) over a trail the ' +
  'instance never recorded, or over an instance that already held projects, identities or people: the trail before ' +
  'it was deleted or rewritten. The service keeps serving and auditing; ' +
  'audit-verify and the admin UI report the chain as broken. Restore the database from a backup whose audit head ' +
  'matches one recorded out of band to recover the history.';

/** The head as an operator records it out of band (audit-verify --recorded-head ID:MAC). */
export const headLine = (h: AuditHeadSummary) =>
  `audit head: entries=${h.entries} lastId=${h.lastId} mac=${h.mac} (audit-verify --recorded-head ${h.lastId}:${h.mac})`;

/**
 * Logs the chain's signed head every `every` audit entries this replica appends, and on
 * demand (at shutdown): a log store outside the database then holds heads that
 * `audit-verify --recorded-head` checks, so a rollback of the whole trail with its anchor
 * shows. The head is read from the anchor row (the one the MAC covers), never recomputed.
 */
export function auditHeadLog(deps: { store: Pick<Store, 'audit'>; log: (line: string, head: AuditHeadSummary) => void; every: number }) {
  const { store, log, every } = deps;
  let appended = 0;
  async function emit() {
    const a = await store.audit.anchor();
    if (a) {
      const head = headSummary({ ...a });
      log(headLine(head), head);
    }
  }
  return {
    /** Called after each committed change with the number of entries it appended. */
    committed(entries: number) {
      const before = appended;
      appended += entries;
      if (entries > 0 && Math.floor(before / every) !== Math.floor(appended / every)) void emit().catch(() => {});
    },
    emit,
  };
}
export type AuditHeadLog = ReturnType<typeof auditHeadLog>;

export interface AuditDeps {
  store: Pick<Store, 'audit'>;
  access: Pick<AccessControl, 'authorize'>;
  verifier: Pick<AuditVerifier, 'verify' | 'requestFull'>;
}

export type AuditQuery = Omit<AuditFilter, 'offset' | 'limit'> & { offset?: number; limit?: number };

export const AUDIT_DEFAULT_LIMIT = 20;
/** Infisical's bound. */
export const AUDIT_MAX_LIMIT = 1000;

export function auditDomain(deps: AuditDeps) {
  const { store, access, verifier } = deps;
  return {
    async list(actor: Actor | SystemActor, q: AuditQuery): Promise<AuditListRow[]> {
      const superadmin = actor.kind === 'system' || (actor.kind === 'user' && actor.superadmin === true);
      let projectId = q.projectId;
      if (!superadmin) {
        if (projectId === undefined) {
          throw new AppError('FORBIDDEN', 'You are not allowed to access this resource; project admins list with their projectId');
        }
        projectId = (await access.authorize(actor, { id: projectId }, 'project:admin')).project.id;
      } else if (projectId !== undefined) {
        projectId = projectId.toLowerCase();
      }
      const limit = q.limit ?? AUDIT_DEFAULT_LIMIT;
      const offset = q.offset ?? 0;
      if (!Number.isSafeInteger(limit) || limit < 1 || limit > AUDIT_MAX_LIMIT) {
        throw new AppError('VALIDATION', `limit must be an integer from 1 to ${AUDIT_MAX_LIMIT}`);
      }
      if (!Number.isSafeInteger(offset) || offset < 0) throw new AppError('VALIDATION', 'offset must be a non-negative integer');
      if (q.startDate && q.endDate && q.startDate > q.endDate) throw new AppError('VALIDATION', 'startDate must not be after endDate');
      return store.audit.list({ ...q, projectId, limit, offset });
    },

    /**
     * The chain from the newest keyed checkpoint to its anchor, within a bounded wait,
     * beside the latest background full walk (see auditVerifier.ts); superadmin only.
     */
    async verify(actor: Actor | SystemActor): Promise<AuditVerifyResult> {
      requireOrgAdmin(actor);
      return verifier.verify();
    },

    /** Asks for a full walk of every entry and checkpoint now, in the background: its run id (superadmin only). */
    requestFullVerify(actor: Actor | SystemActor): { runId: string } {
      requireOrgAdmin(actor);
      return verifier.requestFull();
    },
  };
}
export type AuditDomain = ReturnType<typeof auditDomain>;
