// Start-up key checks and the instance's system key. The canary is a blob sealed with
// the system key at first start; if it does not open, ENCRYPTION_KEY is not the key
// this database was written with, and the service must not start.
import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { Crypto } from '../../crypto/index.js';
import type { LegacyRecord } from '../../storage/audit.js';
import type { Store, TxStores } from '../../storage/index.js';
import { macPrivilegeRows, type PrivilegeKey } from '../../storage/privilege.js';

export const CANARY_AAD = 'vault-standalone:canary:v1';
/** The canary of versions before the instance record: the instance has not been upgraded yet. */
const CANARY_TEXT = 'vault-standalone canary v1';
const CANARY_V2 = 'vault-standalone canary v2';

/**
 * What the instance recorded once, sealed in its canary (so under a key the database
 * does not hold, and read at every start): how it came to be, and which audit entries
 * predate the keyed chain. Written by the first start of a fresh instance, or by the one
 * start that upgrades an instance whose canary is the first version
 * (server/domain/integrity.ts); never rewritten, only re-sealed as it is by a rekey.
 */
export interface InstanceRecord {
  /** 'fresh': this version created the instance; 'upgraded': it upgraded an older one. */
  origin: 'fresh' | 'upgraded';
  /** The audit entries written before the chain was keyed (none on a fresh instance). */
  legacy: LegacyRecord;
}

export const NO_LEGACY: LegacyRecord = { entries: 0, lastId: 0, head: Buffer.alloc(32).toString('hex') };

export const canaryText = (record: InstanceRecord) => JSON.stringify([CANARY_V2, record]);

/** The record a canary's text holds: null for the first version's, undefined for a text that is no canary. */
export function recordOf(text: string): InstanceRecord | null | undefined {
  if (text === CANARY_TEXT) return null;
  try {
    const [label, r] = JSON.parse(text) as [unknown, InstanceRecord];
    const l = r?.legacy;
    if (label !== CANARY_V2 || (r.origin !== 'fresh' && r.origin !== 'upgraded')) return undefined;
    if (!Number.isSafeInteger(l?.entries) || !Number.isSafeInteger(l?.lastId) || typeof l?.head !== 'string') return undefined;
    return { origin: r.origin, legacy: { entries: l.entries, lastId: l.lastId, head: l.head } };
  } catch {
    return undefined;
  }
}

export class WrongEncryptionKeyError extends Error {
  constructor(provider: 'local' | 'pkcs11' = 'local') {
    super(
      provider === 'pkcs11'
        ? 'PKCS11_KEY_LABEL: the token\'s key does not match the root key this database was encrypted with; refusing to start. ' +
            'Nothing was changed. Start with the original token and key (or move keys with vault-standalone rotate-key).'
        : 'ENCRYPTION_KEY does not match the key this database was encrypted with; refusing to start. ' +
            'Nothing was changed. Start with the original ENCRYPTION_KEY (or rotate keys with the CLI).',
    );
  }
}

/** The AAD binding a wrapped data key to its row. */
export const dataKeyAad = (keyId: string) => `vault-standalone:data-key:${keyId}`;

/** A MAC key version: the system key it is derived from (crypto_keys row, purpose 'system'). */
export interface MacKey {
  id: string;
  wrapped: Buffer;
}

export interface Keyring {
  /**
   * The instance record the canary holds; null while the canary is the first version's
   * (an instance not yet upgraded: server/domain/integrity.ts upgradeInstance).
   */
  readonly record: InstanceRecord | null;
  /** Keyed hash of a machine client secret under the current MAC key, computed in the crypto workers. */
  macClientSecret(secret: string): Promise<Buffer>;
  /** The same, with the MAC key version it was made under (what a client secret row records). */
  macCurrent(secret: string): Promise<{ keyId: string; mac: Buffer }>;
  /**
   * The same under the current MAC key version as the caller read it (a login reads it with
   * its client id); undefined (the canary's key is gone) fails as macCurrent does.
   */
  macWith(key: MacKey | undefined, secret: string): Promise<{ keyId: string; mac: Buffer }>;
  /**
   * The candidate whose stored hash is the secret's MAC under the candidate's own MAC key
   * version (`current` is the secret's MAC under the current version, computed already).
   * Every candidate is compared: no early exit that times the position.
   */
  findClientSecret<C extends { secretHash: Buffer; macKeyId: string; macKeyWrapped: Buffer }>(
    secret: string,
    candidates: readonly C[],
    current: { keyId: string; mac: Buffer },
  ): Promise<C | undefined>;
}

/**
 * The client-secret MAC key is versioned: it is the system key the canary is sealed
 * with, and `rekey` replaces both (rekeyMacKey). Each client secret row names the key its
 * hash was made with (identity_client_secrets.mac_key_id); a login verifies under that
 * version and, when it is not the current one, the hash is re-made under the current one
 * (machineAuth). The current version is read from the database for each MAC (one small
 * query), so every replica follows a re-key at once.
 */
export async function openKeyring(store: Store, crypto: Crypto): Promise<Keyring> {
  let canary = await store.keys.canary();
  if (!canary) {
    await store.transaction(async (s) => {
      // Replicas starting together: one creates the canary, the others wait and read it.
      await s.tx`select pg_advisory_xact_lock(74820115)`;
      if (await s.keys.canary()) return;
      const id = randomUUID();
      const wrapped = await crypto.generateDataKey(dataKeyAad(id));
      await s.keys.insert({ id, purpose: 'system', rootKeyVersion: crypto.rootKeyVersion, wrapped });
      // A first start: the instance is this version's; no audit entry predates the keyed chain.
      const record: InstanceRecord = { origin: 'fresh', legacy: NO_LEGACY };
      const [blob] = await crypto.sealMany(wrapped, dataKeyAad(id), [{ plaintext: canaryText(record), aad: CANARY_AAD }]);
      await s.keys.insertCanary(id, blob!);
    });
    canary = await store.keys.canary();
  }
  const systemKey = await store.keys.get(canary!.keyId);
  if (!systemKey) throw new Error('the canary names a system key that does not exist');
  const keyAad = dataKeyAad(systemKey.id);
  let record: InstanceRecord | null | undefined;
  try {
    const [text] = await crypto.openMany(systemKey.wrapped, keyAad, [{ blob: canary!.blob, aad: CANARY_AAD }]);
    record = recordOf(text!);
    if (record === undefined) throw new WrongEncryptionKeyError(crypto.rootKeyProvider);
  } catch (err) {
    if (err instanceof WrongEncryptionKeyError) throw err;
    if ((err as { code?: string }).code === 'UNWRAP_FAILED' || (err as { code?: string }).code === 'OPEN_FAILED') {
      throw new WrongEncryptionKeyError(crypto.rootKeyProvider);
    }
    throw err;
  }
  const macUnder = (key: MacKey, secret: string) => crypto.mac(key.wrapped, dataKeyAad(key.id), secret);
  const macWith = async (key: MacKey | undefined, secret: string) => {
    if (!key) throw new Error('the canary names a system key that does not exist');
    return { keyId: key.id, mac: await macUnder(key, secret) };
  };
  const macCurrent = async (secret: string) => macWith(await store.keys.currentMacKey(), secret);
  return {
    record: record!,
    macClientSecret: async (secret) => (await macCurrent(secret)).mac,
    macCurrent,
    macWith,
    async findClientSecret(secret, candidates, now) {
      const macs = new Map<string, Buffer>([[now.keyId, now.mac]]);
      for (const c of candidates) {
        if (!macs.has(c.macKeyId)) macs.set(c.macKeyId, await macUnder({ id: c.macKeyId, wrapped: c.macKeyWrapped }, secret));
      }
      let match: (typeof candidates)[number] | undefined;
      for (const c of candidates) {
        const mac = macs.get(c.macKeyId)!;
        if (c.secretHash.length === mac.length && timingSafeEqual(c.secretHash, mac)) match = c;
      }
      return match;
    },
  };
}

/**
 * rekey: a new MAC key version. A fresh system key becomes the canary's (the canary is
 * sealed again under it), which makes it the current MAC key for every replica. The old
 * system key stays while client secrets still name it (their next login re-MACs them);
 * retireMacKeys deletes it once none does. Returns the new key's id.
 */
export async function rekeyMacKey(s: TxStores, crypto: Crypto): Promise<{ from: string; to: string; privilegeRowsRefused: number }> {
  const canary = await s.keys.canaryForUpdate();
  if (!canary) throw new Error('the canary is missing: start the service once first');
  const old = await s.keys.get(canary.keyId);
  if (!old) throw new Error('the canary names a system key that does not exist');
  // The canary's text (the instance record) goes to the new key as it is.
  const [text] = await crypto.openMany(old.wrapped, dataKeyAad(old.id), [{ blob: canary.blob, aad: CANARY_AAD }]);
  const id = randomUUID();
  const wrapped = await crypto.generateDataKey(dataKeyAad(id));
  await s.keys.insert({ id, purpose: 'system', rootKeyVersion: crypto.rootKeyVersion, wrapped });
  const [blob] = await crypto.sealMany(wrapped, dataKeyAad(id), [{ plaintext: text!, aad: CANARY_AAD }]);
  await s.keys.replaceCanary(id, blob!);
  // Privilege rows move to the new version now (they are few), each only if its MAC
  // holds: a row edited in the database is not blessed, and once the old key is retired
  // a copy of a row from before (with its old MAC) no longer verifies.
  const { refused } = await macPrivilegeRows(s.tx, privilegeKeyOf(crypto), { id, wrapped }, { onlyValid: true });
  return { from: canary.keyId, to: id, privilegeRowsRefused: refused };
}

/** The PrivilegeKey storage MACs privilege rows with: the crypto workers, under a MAC key version. */
export function privilegeKeyOf(crypto: Pick<Crypto, 'mac' | 'macMany'>): PrivilegeKey {
  return {
    mac: (key, message) => crypto.mac(key.wrapped, dataKeyAad(key.id), message),
    macs: (key, messages) => crypto.macMany(key.wrapped, dataKeyAad(key.id), messages),
  };
}
