// Start-up key checks and the instance's system key. The canary is a blob sealed with
// the system key at first start; if it does not open, ENCRYPTION_KEY is not the key
// this database was written with, and the service must not start.
import { randomUUID } from 'node:crypto';
import type { Crypto } from '../../crypto/index.js';
import type { Store } from '../../storage/index.js';

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

export interface Keyring {
  /** Keyed hash of a machine client secret, computed in the crypto workers. */
  macClientSecret(secret: string): Promise<Buffer>;
}

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
  return {
    macClientSecret: (secret) => crypto.mac(systemKey.wrapped, keyAad, secret),
  };
}
