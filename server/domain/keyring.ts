// Start-up key checks and the instance's system key. The canary is a blob sealed with
// the system key at first start; if it does not open, ENCRYPTION_KEY is not the key
// this database was written with, and the service must not start.
import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { Crypto } from '../../crypto/index.js';
import type { Store, TxStores } from '../../storage/index.js';

const CANARY_AAD = 'vault-standalone:canary:v1';
const CANARY_TEXT = 'vault-standalone canary v1';

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
      const [blob] = await crypto.sealMany(wrapped, dataKeyAad(id), [{ plaintext: CANARY_TEXT, aad: CANARY_AAD }]);
      await s.keys.insertCanary(id, blob!);
    });
    canary = await store.keys.canary();
  }
  const systemKey = await store.keys.get(canary!.keyId);
  if (!systemKey) throw new Error('the canary names a system key that does not exist');
  const keyAad = dataKeyAad(systemKey.id);
  try {
    const [text] = await crypto.openMany(systemKey.wrapped, keyAad, [{ blob: canary!.blob, aad: CANARY_AAD }]);
    if (text !== CANARY_TEXT) throw new WrongEncryptionKeyError(crypto.rootKeyProvider);
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
export async function rekeyMacKey(s: TxStores, crypto: Crypto): Promise<{ from: string; to: string }> {
  const canary = await s.keys.canaryForUpdate();
  if (!canary) throw new Error('the canary is missing: start the service once first');
  const id = randomUUID();
  const wrapped = await crypto.generateDataKey(dataKeyAad(id));
  await s.keys.insert({ id, purpose: 'system', rootKeyVersion: crypto.rootKeyVersion, wrapped });
  const [blob] = await crypto.sealMany(wrapped, dataKeyAad(id), [{ plaintext: CANARY_TEXT, aad: CANARY_AAD }]);
  await s.keys.replaceCanary(id, blob!);
  return { from: canary.keyId, to: id };
}
